// Package rdb reads and writes Redis's RDB serialization (version 10, as Redis 7.0 writes it): whole
// snapshot files and the DUMP/RESTORE payloads, which encode one value the same way. Encoding
// chooses Redis 7.0's compact encodings (listpack, intset, quicklist of listpacks) by its size
// thresholds, so Redis loads iocache's files with the encodings it would have used itself;
// decoding also accepts the older encodings Redis 7.0 still loads (ziplists, zipmaps, plain
// linked lists). Values are iocache's keyspace objects.
package rdb

import "errors"

// Version is the RDB format version written: Redis 7.0's.
const Version = 10

// Opcodes that introduce something other than a key.
const (
	opFunction2     = 245
	opFunctionPreGA = 246
	opModuleAux     = 247
	opIdle          = 248
	opFreq          = 249
	opAux           = 250
	opResizeDB      = 251
	opExpireTimeMs  = 252
	opExpireTime    = 253
	opSelectDB      = 254
	opEOF           = 255
)

// Value types (RDB_TYPE_*).
const (
	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeModulePreGA      = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeStreamListpacks  = 15
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks2 = 19
)

// Quicklist node containers (QUICKLIST_NODE_CONTAINER_*).
const (
	containerPlain  = 1
	containerPacked = 2
)

var (
	// ErrFormat is returned for input that is not valid RDB.
	ErrFormat = errors.New("rdb: bad data format")
	// ErrEmptyKey is returned for a collection with no elements: Redis skips such keys when
	// loading a file and refuses them in RESTORE.
	ErrEmptyKey = errors.New("rdb: empty key")
	// ErrChecksum is returned when a file's CRC64 does not match its contents.
	ErrChecksum = errors.New("rdb: wrong checksum")
	// ErrListElemTooBig is returned for a list element longer than iocache's lists hold
	// (keyspace.MaxListElem, 4 GiB - 1 bytes), which Redis keeps in a plain quicklist node.
	ErrListElemTooBig = errors.New("rdb: a list element is longer than 4294967295 bytes")
	// ErrStringTooLarge is returned, before anything is allocated for it, for a string longer
	// than the decoder was told any string may be (RestoreOptions.MaxString).
	ErrStringTooLarge = errors.New("rdb: a string is longer than this server may hold")
)
