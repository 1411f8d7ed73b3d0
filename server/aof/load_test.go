package aof

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/resp"
)

func command(args ...string) []byte {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	return resp.AppendCommand(nil, argv)
}

// replayed runs Replay over data with a handler that records the commands (a MULTI opens a
// transaction until EXEC), and the RDB preamble's first bytes.
func replayed(data []byte) (cmds []string, preamble string, err error) {
	open := false
	err = Replay(bytes.NewReader(data), Handler{
		RDB: func(r *bufio.Reader) error {
			b := make([]byte, len("REDIS0011"))
			_, err := io.ReadFull(r, b)
			preamble = string(b)
			return err
		},
		Command: func(argv [][]byte) (bool, error) {
			var words []string
			for _, a := range argv {
				words = append(words, string(a))
			}
			cmds = append(cmds, strings.Join(words, " "))
			switch strings.ToUpper(words[0]) {
			case "MULTI":
				open = true
				return true, nil
			case "EXEC":
				open = false
			case "FAIL":
				return false, errors.New("the engine refused it")
			}
			return false, nil
		},
		InTransaction: func() bool { return open },
	})
	return cmds, preamble, err
}

// TestReplay: commands in order, annotations skipped, an RDB preamble handed over first.
func TestReplay(t *testing.T) {
	data := slices.Concat([]byte("REDIS0011"), command("SET", "k", "a\r\nb"), []byte("#TS:1700000000\r\n"),
		command("SELECT", "3"), command("MULTI"), command("INCR", "n"), command("EXEC"))
	cmds, preamble, err := replayed(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SET k a\r\nb", "SELECT 3", "MULTI", "INCR n", "EXEC"}
	if !slices.Equal(cmds, want) || preamble != "REDIS0011" {
		t.Fatalf("replayed %q after %q, want %q", cmds, preamble, want)
	}
	if cmds, _, err := replayed(nil); err != nil || len(cmds) != 0 {
		t.Fatalf("an empty file: %q %v", cmds, err)
	}
}

// TestReplayTruncated: a file cut inside a command is valid up to the end of the command
// before, as Redis's loader truncates it; one that ends between the commands of a transaction
// is valid up to its MULTI. Truncated where it says, again while it says so, the file replays
// cleanly.
func TestReplayTruncated(t *testing.T) {
	first := command("SET", "a", "1")
	bounds := []int{len(first)}
	whole := first
	for _, c := range [][]byte{command("MULTI"), command("INCR", "n"), command("EXEC")} {
		whole = append(whole, c...)
		bounds = append(bounds, len(whole))
	}
	for cut := 1; cut < len(whole); cut++ {
		_, _, err := replayed(whole[:cut])
		if cut == len(first) {
			if err != nil {
				t.Fatalf("cut after the first command: %v", err)
			}
			continue
		}
		var short *TruncatedError
		if !errors.As(err, &short) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		before := 0 // the last command's end before the cut
		for _, b := range bounds {
			if b < cut {
				before = b
			}
		}
		inTx := slices.Contains(bounds, cut) // a clean end, inside the transaction
		want := int64(before)
		if inTx {
			want = int64(len(first))
		}
		if short.InTransaction != inTx || short.ValidUpTo != want {
			t.Fatalf("cut at %d: %+v, want valid up to %d (in a transaction: %v)", cut, short, want, inTx)
		}
		data := whole[:cut]
		for errors.As(err, &short) {
			data = data[:short.ValidUpTo]
			_, _, err = replayed(data)
		}
		if err != nil || (len(data) != 0 && len(data) != len(first)) {
			t.Fatalf("cut at %d, truncated to %d bytes: %v", cut, len(data), err)
		}
	}
}

// TestReplayErrors: what is not RESP is a format error; a callback's error comes back as it is,
// and stops the replay.
func TestReplayErrors(t *testing.T) {
	for _, bad := range []string{"SET a 1\r\n", "*0\r\n", "*x\r\n", "*1\r\n+OK\r\n", "*1\r\n$-2\r\n"} {
		if _, _, err := replayed([]byte(bad)); !errors.Is(err, ErrBadFormat) {
			t.Errorf("%q: %v, want a format error", bad, err)
		}
	}
	cmds, _, err := replayed(slices.Concat(command("FAIL"), command("SET", "a", "1")))
	if err == nil || err.Error() != "the engine refused it" || len(cmds) != 1 {
		t.Fatalf("callback error: %v after %q", err, cmds)
	}
	rdbErr := errors.New("bad rdb")
	err = Replay(strings.NewReader("REDIS0011"), Handler{RDB: func(*bufio.Reader) error { return rdbErr }})
	if err != rdbErr {
		t.Fatalf("RDB error: %v", err)
	}
}
