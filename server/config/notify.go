package config

import "errors"

// Keyspace notification classes, as Redis numbers them in notify-keyspace-events.
const (
	NotifyKeyspace = 1 << iota // K: __keyspace@<db>__:<key> channels
	NotifyKeyevent             // E: __keyevent@<db>__:<event> channels
	NotifyGeneric              // g: DEL, EXPIRE, RENAME, ...
	NotifyString               // $
	NotifyList                 // l
	NotifySet                  // s
	NotifyHash                 // h
	NotifyZSet                 // z
	NotifyExpired              // x
	NotifyEvicted              // e
	NotifyStream               // t
	NotifyKeyMiss              // m
	NotifyModule               // d
	NotifyNew                  // n
)

// NotifyAll is what "A" stands for.
const NotifyAll = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash | NotifyZSet |
	NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule

var errNotifyClass = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

var notifyChars = map[rune]int{
	'A': NotifyAll, 'g': NotifyGeneric, '$': NotifyString, 'l': NotifyList, 's': NotifySet, 'h': NotifyHash,
	'z': NotifyZSet, 'x': NotifyExpired, 'e': NotifyEvicted, 'K': NotifyKeyspace, 'E': NotifyKeyevent,
	't': NotifyStream, 'm': NotifyKeyMiss, 'd': NotifyModule, 'n': NotifyNew,
}

// ParseNotifyFlags reads a notify-keyspace-events value.
func ParseNotifyFlags(v string) (int, error) {
	flags := 0
	for _, ch := range v {
		f, ok := notifyChars[ch]
		if !ok {
			return 0, errNotifyClass
		}
		flags |= f
	}
	return flags, nil
}

// FormatNotifyFlags writes flags as Redis's CONFIG GET does ("A" when every class is on, which
// then leaves out "n", as Redis 7.0 does).
func FormatNotifyFlags(flags int) string {
	var b []byte
	if flags&NotifyAll == NotifyAll {
		b = append(b, 'A')
	} else {
		for _, c := range []struct {
			f  int
			ch byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'}, {NotifyHash, 'h'},
			{NotifyZSet, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'}, {NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'}} {
			if flags&c.f != 0 {
				b = append(b, c.ch)
			}
		}
	}
	if flags&NotifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if flags&NotifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if flags&NotifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}
