package engine

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/iocache/iocache/server/config"
)

// Log levels, as Redis's loglevel directive names them.
const (
	logDebug = iota
	logVerbose
	logNotice
	logWarning
	logNothing
)

// logger writes Redis-style log lines ("pid:M 29 Nov 2026 21:00:00.000 * message") to the
// logfile or standard output. Any thread may log.
type logger struct {
	mu    sync.Mutex
	out   io.Writer
	level int
	pid   int
}

func newLogger(cfg *config.Config) (*logger, error) {
	l := &logger{out: os.Stdout, pid: os.Getpid()}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return nil, fmt.Errorf("Can't open the log file: %w", err)
		}
		l.out = f
	}
	l.setLevel(cfg.LogLevel)
	return l, nil
}

func (l *logger) setLevel(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch name {
	case "debug":
		l.level = logDebug
	case "verbose":
		l.level = logVerbose
	case "warning":
		l.level = logWarning
	case "nothing":
		l.level = logNothing
	default:
		l.level = logNotice
	}
}

var levelMarks = [...]byte{'.', '-', '*', '#'}

func (s *Server) logf(level int, format string, args ...any) {
	l := s.logger
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if level < l.level {
		return
	}
	ts := time.Now().Format("02 Jan 2006 15:04:05.000")
	fmt.Fprintf(l.out, "%d:M %s %c %s\n", l.pid, ts, levelMarks[level], fmt.Sprintf(format, args...))
}
