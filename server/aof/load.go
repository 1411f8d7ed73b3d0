package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Handler is what Replay calls back into: the engine loads and executes, the format is read
// here.
type Handler struct {
	// RDB loads the RDB preamble a base starts with (aof-use-rdb-preamble yes), reading it
	// from r and no further; the commands after it, if any, are replayed. Called only for a
	// file that starts with "REDIS".
	RDB func(r *bufio.Reader) error
	// Command executes one command read from the file. multi reports that it opened a
	// transaction (MULTI): should the file end before the transaction does, it is cut where
	// the transaction began, not after its last complete command.
	Command func(argv [][]byte) (multi bool, err error)
	// InTransaction reports, once the file ends, that the commands executed left a
	// transaction open (no EXEC after a MULTI).
	InTransaction func() bool
}

// ErrBadFormat is a file that is not a sequence of RESP commands (or an I/O error reading it);
// Replay wraps the cause in it.
var ErrBadFormat = errors.New("bad AOF format")

// TruncatedError is a file that ends inside a command, or inside a transaction
// (InTransaction): what came before ValidUpTo loaded, and cutting the file there leaves it
// loadable (Redis's aof-load-truncated).
type TruncatedError struct {
	ValidUpTo     int64
	InTransaction bool
}

func (e *TruncatedError) Error() string {
	if e.InTransaction {
		return fmt.Sprintf("AOF ends inside a transaction: valid up to offset %d", e.ValidUpTo)
	}
	return fmt.Sprintf("unexpected end of file: AOF valid up to offset %d", e.ValidUpTo)
}

// errShort is a file that ends inside a command.
var errShort = errors.New("unexpected end of file")

// countingReader counts the bytes read from a file, so that Replay knows the offset of the last
// complete command behind its buffer.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Replay reads one file of the AOF from r (Redis's loadSingleAppendOnlyFile, less what the
// server does with each command): an RDB preamble to h.RDB, then each command, in order, to
// h.Command; "#" annotation lines (#TS:) are skipped. It returns nil at a clean end, a
// *TruncatedError for a file cut short, an error wrapping ErrBadFormat, or the first error a
// callback returned, as it is.
func Replay(r io.Reader, h Handler) error {
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	offset := func() int64 { return cr.n - int64(br.Buffered()) }
	if sig, _ := br.Peek(5); string(sig) == "REDIS" {
		if err := h.RDB(br); err != nil {
			return err
		}
	}
	validUpTo := offset()
	var validBeforeMulti int64
	for {
		argv, err := readCommand(br)
		if err == io.EOF {
			break
		}
		if err == errShort {
			return &TruncatedError{ValidUpTo: validUpTo}
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadFormat, err)
		}
		if argv == nil {
			continue // an annotation
		}
		multi, err := h.Command(argv)
		if err != nil {
			return err
		}
		if multi {
			validBeforeMulti = validUpTo
		}
		validUpTo = offset()
	}
	if h.InTransaction() {
		return &TruncatedError{ValidUpTo: validBeforeMulti, InTransaction: true}
	}
	return nil
}

// readCommand reads one command in RESP form; nil argv for an annotation line ("#TS:...").
// It returns io.EOF at a clean end, errShort inside a command, another error for a format
// error. Each argument is a slice of its own: a command executed may keep its arguments.
func readCommand(br *bufio.Reader) ([][]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	if err != nil {
		if err == io.EOF {
			return nil, errShort
		}
		return nil, err
	}
	if line[0] == '#' {
		return nil, nil
	}
	if line[0] != '*' {
		return nil, errors.New("format")
	}
	argc, err := strconv.Atoi(string(bytes.TrimRight(line[1:], "\r\n")))
	if err != nil || argc < 1 {
		return nil, errors.New("format")
	}
	argv := make([][]byte, 0, min(argc, 1024))
	for j := 0; j < argc; j++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				return nil, errShort
			}
			return nil, err
		}
		if line[0] != '$' {
			return nil, errors.New("format")
		}
		n, err := strconv.Atoi(string(bytes.TrimRight(line[1:], "\r\n")))
		if err != nil || n < 0 {
			return nil, errors.New("format")
		}
		arg := make([]byte, n+2)
		if _, err := io.ReadFull(br, arg); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, errShort
			}
			return nil, err
		}
		argv = append(argv, arg[:n])
	}
	return argv, nil
}
