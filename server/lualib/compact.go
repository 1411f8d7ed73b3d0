package lualib

import lua "github.com/yuin/gopher-lua"

// Compact finishes a chunk gopher-lua compiled, for every path that compiles one (EVAL, FUNCTION
// LOAD, loadstring, load):
//
//   - it gives back the room the compiler leaves: each function's instructions and line numbers
//     stay in slices made for 1,024 instructions (12 KiB for `return 1`), and a script cache or
//     function library keeps them as long as the chunk lives. Redis's cache costs about 1 KB a
//     small script; without this, 100,000 unique EVALs held 1.6 GB.
//   - it repairs table constructors of more than 25,550 list items (fixSetList).
func Compact(fn *lua.LFunction) {
	if fn != nil && fn.Proto != nil {
		compactProto(fn.Proto)
	}
}

func compactProto(p *lua.FunctionProto) {
	fixSetList(p.Code)
	p.Code = exact(p.Code)
	p.DbgSourcePositions = exact(p.DbgSourcePositions)
	p.Constants = exact(p.Constants)
	p.FunctionPrototypes = exact(p.FunctionPrototypes)
	p.DbgLocals = exact(p.DbgLocals)
	p.DbgCalls = exact(p.DbgCalls)
	p.DbgUpvalues = exact(p.DbgUpvalues)
	for _, child := range p.FunctionPrototypes {
		compactProto(child)
	}
}

// fixSetList repairs the SETLIST instructions of large table constructors. A constructor stores
// its list items 50 at a time, each batch's number in the instruction's 9-bit C; from batch 512
// on (item 25,551), C is 0 and the batch number goes in the next code word, as in Lua 5.1, but
// gopher-lua 1.1.2's compiler writes 0 there too: the VM then stores every later batch at index
// -49 and up, and `#{1,1,...30,000 times}` is 25,550 with no error. Batches of one constructor
// come in order, so each such word is the previous batch of the same table register plus one.
func fixSetList(code []uint32) {
	var last [256]uint32 // by table register: the batch number of its last SETLIST
	for pc := 0; pc < len(code); pc++ {
		inst := code[pc]
		if int(inst>>26) != lua.OP_SETLIST {
			continue
		}
		a := (inst >> 18) & 0xff
		c := (inst >> 9) & 0x1ff
		if c != 0 {
			last[a] = c
			continue
		}
		if pc+1 == len(code) {
			return
		}
		pc++ // the word after is the batch number, not an instruction
		if code[pc] == 0 {
			code[pc] = last[a] + 1
		}
		last[a] = code[pc]
	}
}

// exact returns s in a slice of its own length (nil when empty).
func exact[T any](s []T) []T {
	if len(s) == cap(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// ProtoBytes estimates the memory a compiled chunk holds once compacted: its instructions, line
// numbers, constants (string constants with their bytes), debug records and nested functions.
// INFO memory reports it for the script cache and the function libraries.
func ProtoBytes(fn *lua.LFunction) int64 {
	if fn == nil || fn.Proto == nil {
		return 0
	}
	return protoBytes(fn.Proto)
}

func protoBytes(p *lua.FunctionProto) int64 {
	const protoHeader, valueSize, debugRecord = 200, 16, 40 // FunctionProto's fields; an interface; a DbgLocalInfo/DbgCall
	n := int64(protoHeader + 4*len(p.Code) + 4*len(p.DbgSourcePositions) + valueSize*len(p.Constants) +
		debugRecord*(len(p.DbgLocals)+len(p.DbgCalls)) + 16*len(p.DbgUpvalues) + 8*len(p.FunctionPrototypes) + len(p.SourceName))
	for _, c := range p.Constants {
		if s, ok := c.(lua.LString); ok {
			n += int64(len(s))
		}
	}
	for _, child := range p.FunctionPrototypes {
		n += protoBytes(child)
	}
	return n
}
