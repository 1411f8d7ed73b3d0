package engine

import "time"

var monoStart = time.Now()

// nanotime is a monotonic clock in nanoseconds, cheap enough to time every command.
func nanotime() int64 { return int64(time.Since(monoStart)) }

// nanotimeWall is the wall clock in unix nanoseconds.
func nanotimeWall() int64 { return time.Now().UnixNano() }
