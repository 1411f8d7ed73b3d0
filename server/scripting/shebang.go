package scripting

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
// and change nothing here (no replicas serve stale data, no cluster). What each flag does is the
// engine's to apply; this file only reads them.

// Flags are a script's shebang flags.
type Flags uint8

// The flags a shebang may declare, and Shebang, which every script with a "#!lua" line has.
const (
	NoWrites Flags = 1 << iota
	AllowOOM
	AllowStale
	NoCluster
	AllowCrossSlotKeys
	Shebang // declared with "#!lua": not in EVAL compatibility mode
)

var flagNames = map[string]Flags{
	"no-writes":             NoWrites,
	"allow-oom":             AllowOOM,
	"allow-stale":           AllowStale,
	"no-cluster":            NoCluster,
	"allow-cross-slot-keys": AllowCrossSlotKeys,
}

// ParseShebang reads a script's "#!lua ..." line, as Redis's evalExtractShebangFlags does,
// and returns its flags and the code to compile: the body after the shebang line, starting with
// that line's newline so that line numbers in errors stay those of the body. A body without a
// shebang is returned whole with no flags. The error's text is Redis's, without its "ERR ".
func ParseShebang(body []byte) (Flags, []byte, error) {
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
	flags := Shebang
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, nil, errors.New("Unknown lua shebang option: " + p)
		}
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			f, known := flagNames[name]
			if !known {
				return 0, nil, errors.New("Unexpected flag in script shebang: " + name)
			}
			flags |= f
		}
	}
	return flags, body[end:], nil
}
