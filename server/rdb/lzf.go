package rdb

// LZF, the compression of RDB strings (Redis's lzf_c.c/lzf_d.c): a stream of runs, each starting
// with a control byte. Below 32 the control byte announces a literal run of ctrl+1 bytes;
// otherwise its top 3 bits are a match length minus 2 (7: one more byte of length follows) and
// its low 5 bits, with the next byte, the distance back minus 1 (up to 8 KiB).

const (
	lzfMaxLiteral = 32
	lzfMaxOffset  = 1 << 13
	lzfMaxMatch   = 7 + 255 + 2
	lzfHashLog    = 14
)

// lzfCompress compresses in into dst (reset first) and returns it, or nil when the result would
// be longer than limit bytes. table is scratch space of 1<<lzfHashLog entries.
func lzfCompress(dst, in []byte, limit int, table *[1 << lzfHashLog]int32) []byte {
	clear(table[:])
	out := dst[:0]
	litStart := 0 // first byte of the pending literal run
	flushLiterals := func(end int) {
		for litStart < end {
			n := min(end-litStart, lzfMaxLiteral)
			out = append(out, byte(n-1))
			out = append(out, in[litStart:litStart+n]...)
			litStart += n
		}
	}
	ip := 0
	for ip+2 < len(in) {
		if len(out) > limit {
			return nil
		}
		h := (uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])) * 2654435761 >> (32 - lzfHashLog)
		ref := int(table[h]) - 1 // table holds position+1 so that zero means empty
		table[h] = int32(ip + 1)
		off := ip - ref - 1
		if ref < 0 || off >= lzfMaxOffset || in[ref] != in[ip] || in[ref+1] != in[ip+1] || in[ref+2] != in[ip+2] {
			ip++
			continue
		}
		maxLen := min(lzfMaxMatch, len(in)-ip)
		n := 3
		for n < maxLen && in[ref+n] == in[ip+n] {
			n++
		}
		flushLiterals(ip)
		l := n - 2
		if l < 7 {
			out = append(out, byte(l<<5|off>>8))
		} else {
			out = append(out, byte(7<<5|off>>8), byte(l-7))
		}
		out = append(out, byte(off))
		ip += n
		litStart = ip
	}
	flushLiterals(len(in))
	if len(out) > limit {
		return nil
	}
	return out
}

// lzfDecompress expands in into out, which must come out exactly full.
func lzfDecompress(in, out []byte) bool {
	ip, op := 0, 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < lzfMaxLiteral {
			n := ctrl + 1
			if ip+n > len(in) || op+n > len(out) {
				return false
			}
			copy(out[op:], in[ip:ip+n])
			ip += n
			op += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if ip >= len(in) {
				return false
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return false
		}
		ref := op - (ctrl&0x1f)<<8 - int(in[ip]) - 1
		ip++
		n += 2
		if ref < 0 || op+n > len(out) {
			return false
		}
		for i := 0; i < n; i++ { // byte by byte: the source may overlap what is being written
			out[op+i] = out[ref+i]
		}
		op += n
	}
	return op == len(out)
}
