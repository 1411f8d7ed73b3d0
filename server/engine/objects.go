package engine

import "github.com/iocache/iocache/server/keyspace"

// objectBytes is the memory a collection accounts for.
func objectBytes(obj any) int64 {
	switch o := obj.(type) {
	case *keyspace.List:
		return o.Bytes()
	case *keyspace.Hash:
		return o.Bytes()
	case *keyspace.Set:
		return o.Bytes()
	case *keyspace.ZSet:
		return o.Bytes()
	}
	return 0
}

// objectLen is a collection's element count.
func objectLen(obj any) int {
	switch o := obj.(type) {
	case *keyspace.List:
		return o.Len()
	case *keyspace.Hash:
		return o.Len()
	case *keyspace.Set:
		return o.Len()
	case *keyspace.ZSet:
		return o.Len()
	}
	return 0
}

// accountObject applies a change of a collection's memory to its DB: call with the size before a
// write, and it returns a function to call after.
func accountObject(db *keyspace.DB, obj any) func() {
	before := objectBytes(obj)
	return func() { db.AddObjectBytes(objectBytes(obj) - before) }
}
