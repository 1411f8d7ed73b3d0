package engine

import (
	"fmt"
	"os"

	"github.com/iocache/iocache/server/aof"
)

// AOF rewrite (BGREWRITEAOF, auto-aof-rewrite-*, appendonly turned on live). Like BGSAVE it is
// forkless: the same point-in-time snapshot (bgsave.go) writes the new base, in RDB format or as
// commands (package aof's BaseWriter), from a thread pinned to aof_rewrite_cpulist. At the cut the buffer goes to the current incremental
// file and a new incremental file opens, already listed in the manifest, so every command after
// the cut lands in it and a crash at any point leaves a manifest that loads: the old base with
// every incremental file until the rewrite is done, then the new base with the new incremental
// file. The replaced files become history in the manifest and are deleted.

// aofRewriteJob is what a snapshot writing an AOF base carries.
type aofRewriteJob struct {
	baseName string
	baseSeq  int64
	// incrName is the incremental file opened at the cut: listed in the manifest already (on),
	// or the temporary one of an AOF turned on live (wait); neither for BGREWRITEAOF with the
	// AOF off, which leaves a base alone. The state may change while the rewrite runs
	// (appendonly turned on), so the job keeps what it started with.
	incrName string
	on, wait bool
	// commands: the base is written as commands (aof-use-rdb-preamble no), not as an RDB.
	commands bool
}

// aofRewriteRunning reports that the running snapshot writes an AOF base.
func (s *Server) aofRewriteRunning() bool {
	sn := s.persist.running
	return sn != nil && sn.aof != nil
}

var (
	errAOFRewriteRunning = fmt.Errorf("Background append only file rewriting already in progress")
	errAOFRewriteFailed  = fmt.Errorf("Can't execute an AOF background rewriting. Please check the server logs for more information.")
)

// startAOFRewrite cuts the snapshot of the new base and opens the incremental file that follows
// it. Nothing else may run: the caller checked.
func (s *Server) startAOFRewrite() error {
	a := &s.aof
	if s.persist.running != nil {
		return errAOFRewriteRunning
	}
	if err := os.MkdirAll(s.aofDir(), 0o755); err != nil {
		s.logf(logWarning, "Can't open or create append-only dir %s: %v", s.cfg.AppendDirname, err)
		return errAOFRewriteFailed
	}
	if a.manifest == nil {
		a.manifest = &aof.Manifest{}
	}
	job := &aofRewriteJob{on: a.on, wait: !a.on && a.waitRewrite, commands: !s.cfg.AOFUseRDBPreamble}
	job.baseName, job.baseSeq = a.manifest.NextBase(s.cfg.AppendFilename, s.cfg.AOFUseRDBPreamble)
	switch {
	case a.on:
		name, seq := a.manifest.NextIncr(s.cfg.AppendFilename)
		f, _, err := aof.OpenIncr(s.aofDir(), name, true)
		if err != nil {
			s.logf(logWarning, "%v", err)
			return errAOFRewriteFailed
		}
		m := a.manifest.Clone()
		m.AddIncr(name, seq)
		if err := s.persistManifest(m); err != nil {
			_ = f.Close()
			s.logf(logWarning, "%v", err)
			return errAOFRewriteFailed
		}
		a.manifest = m
		s.switchIncr(f, name, 0)
		job.incrName = name
		s.logf(logNotice, "Creating AOF incr file %s on background rewrite", name)
	case a.waitRewrite:
		name := aof.TempIncrName(s.cfg.AppendFilename)
		f, _, err := aof.OpenIncr(s.aofDir(), name, true)
		if err != nil {
			s.logf(logWarning, "%v", err)
			return errAOFRewriteFailed
		}
		s.switchIncr(f, name, 0)
		job.incrName = name
	}
	s.persist.lastBgsaveTry = s.unixtime
	s.startSnapshot(nil, job)
	a.rewriteScheduled = false
	a.rewrites++ // counted when it starts, as Redis counts aof_rewrites
	s.updatePropagation()
	s.logf(logNotice, "Background append only file rewriting started")
	return nil
}

// finishAOFRewrite installs the new base once its writer is done: the manifest lists it and the
// incremental file opened at the cut; what they replace becomes history and is deleted.
func (s *Server) finishAOFRewrite(sn *rdbSnapshot) {
	a := &s.aof
	job := sn.aof
	a.lastRewriteSec = s.unixtime - sn.startUnix
	if sn.cancelled || sn.err != nil {
		if sn.cancelled {
			s.logf(logNotice, "Background AOF rewrite was stopped")
		} else {
			s.rewriteFailed()
			s.logf(logWarning, "Background AOF rewrite terminated with error: %v", sn.err)
		}
		if a.waitRewrite {
			a.rewriteScheduled = true // the AOF turned on live still needs its base
		}
		s.updatePropagation()
		return
	}
	m := a.manifest.Clone()
	// Every incremental file before the cut is in the new base.
	keep := ""
	if job.on {
		keep = job.incrName
	}
	m.Rebase(job.baseName, job.baseSeq, keep)
	if job.wait {
		name, seq := m.NextIncr(s.cfg.AppendFilename)
		if err := os.Rename(s.aofPath(job.incrName), s.aofPath(name)); err != nil {
			s.rewriteInstallFailed(fmt.Errorf("renaming the temporary AOF incr file: %w", err))
			return
		}
		s.logf(logNotice, "Successfully renamed the temporary AOF incr file %s into %s", job.incrName, name)
		a.fileName = name
		m.AddIncr(name, seq)
	}
	if err := s.persistManifest(m); err != nil {
		s.rewriteInstallFailed(err)
		return
	}
	a.manifest = m
	if job.wait {
		a.waitRewrite, a.on = false, true
		s.logf(logNotice, "AOF rewrite: the append only file is on")
	}
	if fi, err := os.Stat(s.aofPath(job.baseName)); err == nil {
		a.baseSize = fi.Size()
	}
	a.currentSize = a.baseSize + a.incrSize
	if !job.on && !job.wait {
		// BGREWRITEAOF with appendonly no: a base alone, as Redis leaves it.
		a.currentSize = a.baseSize
	}
	a.lastRewriteOK = true
	a.consecutiveFailures = 0
	s.logf(logNotice, "Background AOF rewrite terminated with success")
	s.deleteHistory()
	s.updatePropagation()
	s.logf(logNotice, "Background AOF rewrite finished successfully")
}

// rewriteInstallFailed records a rewrite whose base was written but could not be installed.
func (s *Server) rewriteInstallFailed(err error) {
	a := &s.aof
	s.rewriteFailed()
	s.logf(logWarning, "Background AOF rewrite failed to install: %v", err)
	if a.waitRewrite {
		a.rewriteScheduled = true
	}
	s.updatePropagation()
}

// rewriteFailed records a failed rewrite. Each failure leaves one more incremental file in the
// manifest, so after three in a row the next automatic one waits longer and longer (up to an
// hour), as Redis's AOF_REWRITE_LIMITE_THRESHOLD does.
func (s *Server) rewriteFailed() {
	a := &s.aof
	a.lastRewriteOK = false
	a.consecutiveFailures++
	delay := int64(bgsaveRetryDelay)
	if a.consecutiveFailures >= 3 {
		delay = min(3600, int64(60)<<min(a.consecutiveFailures-3, 6))
		s.logf(logWarning, "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in %d seconds", delay)
	}
	a.nextRetry = s.unixtime + delay
}

// deleteHistory removes the files the manifest marks as history, on the bio thread, and the
// manifest forgets them.
func (s *Server) deleteHistory() {
	a := &s.aof
	if a.manifest == nil || len(a.manifest.History) == 0 || s.cfg.AOFDisableAutoGC {
		return
	}
	m := a.manifest.Clone()
	for _, h := range m.History {
		path := s.aofPath(h.Name)
		s.logf(logNotice, "Removing the history file %s in the background", h.Name)
		s.bio.submit(func() { _ = os.Remove(path) })
	}
	m.History = nil
	if err := s.persistManifest(m); err != nil {
		s.logf(logWarning, "%v", err)
		return
	}
	a.manifest = m
}

// aofCron starts the rewrite that waits (scheduled while a snapshot ran, or for an AOF turned on
// live), or one that auto-aof-rewrite-percentage asks for once the AOF outgrew its base.
func (s *Server) aofCron() {
	a := &s.aof
	if s.persist.running != nil {
		return
	}
	if a.rewriteScheduled && s.unixtime >= a.nextRetry {
		_ = s.startAOFRewrite()
		return
	}
	if !a.on || s.cfg.AutoAOFRewritePercentage == 0 || a.currentSize <= s.cfg.AutoAOFRewriteMinSize ||
		s.unixtime < a.nextRetry {
		return
	}
	base := max(a.baseSize, 1)
	growth := a.currentSize*100/base - 100
	if growth >= int64(s.cfg.AutoAOFRewritePercentage) {
		s.logf(logNotice, "Starting automatic rewriting of AOF on %d%% growth", growth)
		_ = s.startAOFRewrite()
	}
}

// cmdBGRewriteAOF is BGREWRITEAOF, with Redis's replies.
func cmdBGRewriteAOF(s *Server, c *client, argv [][]byte) {
	switch {
	case s.aofRewriteRunning():
		s.addError(c, "ERR "+errAOFRewriteRunning.Error())
	case s.persist.running != nil || c.flags&flagExecuting != 0:
		s.aof.rewriteScheduled = true
		s.aof.nextRetry = 0
		c.w.Simple("Background append only file rewriting scheduled")
	default:
		if err := s.startAOFRewrite(); err != nil {
			s.addError(c, "ERR "+errAOFRewriteFailed.Error())
			return
		}
		c.w.Simple("Background append only file rewriting started")
	}
}
