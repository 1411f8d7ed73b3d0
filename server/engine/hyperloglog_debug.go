package engine

import (
	"fmt"
	"strings"

	"github.com/iocache/iocache/server/hll"
)

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key and PFSELFTEST, as Redis 7.0 has them for its own
// tests and for people looking inside a HyperLogLog. GETREG and TODENSE turn a sparse value
// dense, as Redis does.

func cmdPFDebug(s *Server, c *client, argv [][]byte) {
	sub := lowerASCII(string(argv[1]))
	if _, exists := s.lookupWrite(c, argv[2]); !exists {
		s.addError(c, "ERR The specified key does not exist")
		return
	}
	v, ok := s.hllString(c, argv[2], true)
	if !ok {
		return
	}
	switch sub {
	case "getreg", "decode", "encoding", "todense":
	default:
		s.addError(c, fmt.Sprintf("ERR Unknown PFDEBUG subcommand '%s'", argv[1]))
		return
	}
	sparse := !hll.IsDense(v)
	switch sub {
	case "encoding":
		if sparse {
			c.w.Simple("sparse")
		} else {
			c.w.Simple("dense")
		}
	case "decode":
		if !sparse {
			s.addError(c, "ERR HLL encoding is not sparse")
			return
		}
		c.w.BulkString(decodeSparseOps(v[hll.HeaderSize:]))
	case "getreg", "todense":
		h, ok := s.decodeHLLOrReply(c, v)
		if !ok {
			return
		}
		if sparse {
			s.storeHLL(c, argv[2], h.Encode(true))
			s.stats.dirty++
		}
		if sub == "todense" {
			if sparse {
				c.w.Int(1)
			} else {
				c.w.Int(0)
			}
			return
		}
		c.w.Array(hll.Registers)
		for i := 0; i < hll.Registers; i++ {
			c.w.Int(int64(h.Register(i)))
		}
	}
}

// decodeSparseOps writes a sparse HLL's opcodes as PFDEBUG DECODE does: z:run for ZERO, Z:run
// for XZERO, v:value,run for VAL.
func decodeSparseOps(b []byte) string {
	var out strings.Builder
	for i := 0; i < len(b); i++ {
		switch op := b[i]; {
		case op&0xc0 == 0x00:
			fmt.Fprintf(&out, "z:%d ", int(op&0x3f)+1)
		case op&0xc0 == 0x40 && i+1 < len(b):
			fmt.Fprintf(&out, "Z:%d ", (int(op&0x3f)<<8|int(b[i+1]))+1)
			i++
		default:
			fmt.Fprintf(&out, "v:%d,%d ", int(op>>2&0x1f)+1, int(op&3)+1)
		}
	}
	return strings.TrimRight(out.String(), " ")
}

// cmdPFSelfTest checks that sketches survive both encodings with their counts, and answers OK as
// Redis's does when its checks pass.
func cmdPFSelfTest(s *Server, c *client, argv [][]byte) {
	h := hll.New()
	for i := 0; i < 1000; i++ {
		h.Add([]byte(fmt.Sprint("selftest-", i)))
		if i%100 != 99 {
			continue
		}
		want := h.Count()
		for _, dense := range []bool{false, true} {
			back, ok := hll.Decode(h.Encode(dense))
			if !ok || back.Count() != want {
				s.addError(c, fmt.Sprintf("ERR TESTFAILED Register error at %d", i))
				return
			}
		}
	}
	c.w.OK()
}
