package engine

// The process-management directives redis-server honours when it runs under a supervisor:
// pidfile (the pid written at start, removed at exit) and supervised (telling systemd, through
// NOTIFY_SOCKET, or upstart, by stopping itself, that the server is ready). daemonize yes is
// refused by the configuration: a Go process cannot fork itself into the background.

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// writePidFile writes the pid file when pidfile is set; like Redis, a failure is logged and the
// server goes on.
func (s *Server) writePidFile() {
	if s.cfg.PidFile == "" {
		return
	}
	if err := os.WriteFile(s.cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		s.logf(logWarning, "Failed to write PID file: %v", err)
	}
}

func (s *Server) removePidFile() {
	if s.cfg.PidFile != "" {
		_ = os.Remove(s.cfg.PidFile)
	}
}

// supervisor is the supervision in effect: "systemd", "upstart" or "" (none). auto picks the one
// whose environment variable is set, as Redis's redisIsSupervised does.
func (s *Server) supervisor() string {
	mode := s.cfg.SupervisedMode
	if mode == "auto" {
		switch {
		case os.Getenv("UPSTART_JOB") != "":
			mode = "upstart"
		case os.Getenv("NOTIFY_SOCKET") != "":
			mode = "systemd"
		default:
			return ""
		}
	}
	if mode == "no" {
		return ""
	}
	return mode
}

// notifySupervisorReady tells the supervisor the server accepts connections.
func (s *Server) notifySupervisorReady() {
	switch s.supervisor() {
	case "systemd":
		s.notifySystemd("STATUS=Ready to accept connections\nREADY=1\n")
	case "upstart":
		if os.Getenv("UPSTART_JOB") == "" {
			s.logf(logWarning, "upstart supervision requested, but UPSTART_JOB not found!")
			return
		}
		s.logf(logNotice, "supervised by upstart, will stop to signal readiness.")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		_ = os.Unsetenv("UPSTART_JOB")
	}
}

// notifySupervisorStopping tells systemd the server is shutting down.
func (s *Server) notifySupervisorStopping() {
	if s.supervisor() == "systemd" {
		s.notifySystemd("STOPPING=1\n")
	}
}

// notifySystemd sends one sd_notify message to the datagram socket NOTIFY_SOCKET names ('@'
// starts an abstract socket name).
func (s *Server) notifySystemd(msg string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		s.logf(logWarning, "systemd supervision requested or auto-detected, but NOTIFY_SOCKET environment variable not found!")
		return
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		s.logf(logWarning, "Can't connect to systemd socket %s: %v", os.Getenv("NOTIFY_SOCKET"), err)
		return
	}
	defer func() { _ = conn.Close() }() // a datagram socket: nothing is lost at close
	if _, err := conn.Write([]byte(msg)); err != nil {
		s.logf(logWarning, "Can't send notification to systemd: %v", err)
	}
}
