package engine

import (
	"bytes"
	"errors"
	"strings"
)

// Script flags, declared as Redis 7.0 declares them in a script's first line:
//
//	#!lua flags=no-writes,allow-oom
//
// A script without a shebang runs in Redis's EVAL compatibility mode (it may write, and each
// write inside it is checked against maxmemory). With a shebang, a script without no-writes or
// allow-oom is refused as a whole when the server is over maxmemory; a no-writes script is
// read-only (like EVAL_RO) and runs during CLIENT PAUSE WRITE; an allow-oom script's writes are
// not checked against maxmemory. allow-stale, no-cluster and allow-cross-slot-keys are accepted
// and change nothing here (no replicas serve stale data, no cluster).

type scriptFlags uint8

const (
	scriptNoWrites scriptFlags = 1 << iota
	scriptAllowOOM
	scriptAllowStale
	scriptNoCluster
	scriptAllowCrossSlotKeys
	scriptShebang // declared with "#!lua": not in EVAL compatibility mode
)

var scriptFlagNames = map[string]scriptFlags{
	"no-writes":             scriptNoWrites,
	"allow-oom":             scriptAllowOOM,
	"allow-stale":           scriptAllowStale,
	"no-cluster":            scriptNoCluster,
	"allow-cross-slot-keys": scriptAllowCrossSlotKeys,
}

// parseShebang reads a script's "#!lua ..." line, as Redis's evalExtractShebangFlags does,
// and returns its flags and the code to compile: the body after the shebang line, starting with
// that line's newline so that line numbers in errors stay those of the body. A body without a
// shebang is returned whole with no flags.
func parseShebang(body []byte) (scriptFlags, []byte, error) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return 0, body, nil
	}
	end := bytes.IndexByte(body, '\n')
	if end < 0 {
		return 0, nil, errors.New("Invalid script shebang")
	}
	parts := strings.Fields(string(body[:end]))
	if parts[0] != "#!lua" {
		return 0, nil, errors.New("Unexpected engine in script shebang: " + parts[0])
	}
	flags := scriptShebang
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, nil, errors.New("Unknown lua shebang option: " + p)
		}
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			f, known := scriptFlagNames[name]
			if !known {
				return 0, nil, errors.New("Unexpected flag in script shebang: " + name)
			}
			flags |= f
		}
	}
	return flags, body[end:], nil
}

// pausedScript reports whether CLIENT PAUSE WRITE must hold this EVAL or EVALSHA: every
// script may write unless it declares no-writes (EVALSHA: as loaded; unknown scripts are held
// and answer NOSCRIPT once the pause ends, as in Redis).
func (s *Server) pausedScript(argv [][]byte) bool {
	if len(argv) < 2 {
		return true
	}
	var flags scriptFlags
	if equalFold(argv[0], "evalsha") {
		if s.lua == nil {
			return true
		}
		flags = s.lua.flags[strings.ToLower(string(argv[1]))]
	} else {
		flags, _, _ = parseShebang(argv[1])
	}
	return flags&scriptNoWrites == 0
}
