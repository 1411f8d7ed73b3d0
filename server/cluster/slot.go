// Package cluster is Redis Cluster's data model as iocache serves it: the 16,384 hash slots, a
// key's slot (CRC16 of the key or of its {hash tag}), and the topology (which node serves which
// slots, which nodes replicate which) that the operator pushes to every node with an epoch.
// It speaks no network: the engine routes commands with it (MOVED, ASK, CROSSSLOT) and renders
// CLUSTER NODES, SLOTS and SHARDS from it. There is no gossip bus and no election here by
// design: Kubernetes holds the truth and the operator is its only writer (docs/cluster.md).
package cluster

// Slots is the number of hash slots of Redis Cluster.
const Slots = 16384

// crc16Tables are CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum Redis
// Cluster hashes keys with, for slicing by 8: table k advances a byte through k more zero bytes,
// so eight bytes cost eight independent lookups instead of a chain of eight. Routing hashes
// every key of every command in cluster mode.
var crc16Tables = func() (t [8][256]uint16) {
	for i := range t[0] {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < 8; k++ {
		for i := range t[k] {
			prev := t[k-1][i]
			t[k][i] = prev<<8 ^ t[0][byte(prev>>8)]
		}
	}
	return t
}()

// crc16 is the XMODEM CRC16 of b.
func crc16(b []byte) uint16 {
	var crc uint16
	t := &crc16Tables
	for len(b) >= 8 {
		crc = t[7][b[0]^byte(crc>>8)] ^ t[6][b[1]^byte(crc)] ^ t[5][b[2]] ^ t[4][b[3]] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		crc = crc<<8 ^ t[0][byte(crc>>8)^c]
	}
	return crc
}

// KeySlot is the hash slot of key: the CRC16 of the part between the first '{' and the first '}'
// after it when that part is not empty (a hash tag, so that related keys share a slot), else of
// the whole key, modulo 16,384.
func KeySlot(key []byte) int {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					break // "{}": no tag, the whole key is hashed
				}
				return int(crc16(key[i+1:j]) & (Slots - 1))
			}
		}
		break
	}
	return int(crc16(key) & (Slots - 1))
}
