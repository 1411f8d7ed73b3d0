package lualib

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// NumberString formats a Lua number as Redis does for command arguments (%.17g).
func NumberString(n lua.LNumber) string {
	f := float64(n)
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
