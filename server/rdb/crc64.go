package rdb

import "hash/crc64"

// Redis checksums RDB files and DUMP payloads with the CRC-64 variant "Jones" (polynomial
// 0xad93d23594c935a9, reflected, initial value 0, no final xor). The standard library's table
// takes the polynomial bit-reversed; its Update inverts the state on entry and exit, which the
// wrapper undoes.
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// crc64Update extends a Redis CRC-64 state over p.
func crc64Update(crc uint64, p []byte) uint64 { return ^crc64.Update(^crc, crcTable, p) }
