package engine

import (
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// OBJECT ENCODING tells what is stored, and collections convert at Redis 7.0's points: each
// write below crosses (or stops just short of) a threshold, and the encoding it leaves is
// compared with redis-server's, byte for byte, with the data itself. The thresholds are lowered
// with CONFIG SET on both servers, so the crossings are a few elements away; DEBUG RELOAD and
// DUMP/RESTORE show the conversions back that Redis makes when it loads a value.
func TestEncodingConversionsMatchRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	long := strings.Repeat("x", 9)
	enc := func(key string) string { return "OBJECT ENCODING " + key }
	cmds := split(
		"CONFIG SET hash-max-listpack-entries 4", "CONFIG SET hash-max-listpack-value 8",
		"CONFIG SET set-max-intset-entries 4",
		"CONFIG SET zset-max-listpack-entries 4", "CONFIG SET zset-max-listpack-value 8",
		"CONFIG SET list-max-listpack-size 3",

		// Hashes: entries, value length, field length, HSETNX's early check, HINCRBY's field.
		"HSET h a 1 b 2 c 3 d 4", enc("h"), "HSET h a 12345678", enc("h"), "HSET h e 5", enc("h"), "HLEN h", "HGET h a",
		"HSET v a 1", enc("v"), "HSET v b "+long, enc("v"), "HGET v b",
		"HSET f a 1", "HSET f "+long+" 1", enc("f"),
		"HSET nx a 1", "HSETNX nx a "+long, enc("nx"), "HGET nx a",
		"HSET inc a 1", "HINCRBY inc "+long+" 1", enc("inc"),
		"HSET incf a 1", "HINCRBYFLOAT incf a 1.5", enc("incf"), "HINCRBY incf b 12345678901", enc("incf"),
		"HMSET m a 1 b 2 c 3 d 4 e 5", enc("m"), "HDEL m a b c d", enc("m"),
		"HSET r a 1 b 2 c 3 d 4 e 5", "HDEL r a b c d", enc("r"), "DEBUG RELOAD", enc("r"), "HGETALL r",

		// Sets: intset up to set-max-intset-entries integers, hashtable after a string or one too
		// many; never back, except on load.
		"SADD s 1 2 3 4", enc("s"), "SADD s 5", enc("s"), "SREM s 1 2 3", enc("s"), "SCARD s", "SISMEMBER s 5",
		"SADD i 3 -2 70000 1", enc("i"), "SMEMBERS i", "SADD i x", enc("i"), "SREM i x", enc("i"),
		"SADD z 01", enc("z"), "SADD w -0", enc("w"), "SADD big 9223372036854775807 -9223372036854775808", enc("big"), "SMEMBERS big",
		"SADD a 1 2 3", "SADD b 2 3 x", "SINTERSTORE ab a b", enc("ab"), "SUNIONSTORE u a b", enc("u"), "SDIFFSTORE d b a", enc("d"),
		"SMOVE b e 2", enc("e"), "SMOVE b e2 x", enc("e2"),
		"SADD p 1 2 3 4 5", "SREM p 1 2 3 4", enc("p"), "DEBUG RELOAD", enc("p"), enc("s"), enc("i"), "SMEMBERS i",

		// Sorted sets: entries, member length, ZADD's hints, stores that convert back.
		"ZADD q 1 a 2 b 3 c 4 d", enc("q"), "ZADD q 5 e", enc("q"), "ZREM q a b c", enc("q"), "ZRANGE q 0 -1 WITHSCORES",
		"ZADD hint 1 a 1 a 1 a 1 a 1 a", enc("hint"), "ZCARD hint", "CONFIG SET zset-max-listpack-entries 0",
		"ZADD off 1 a", enc("off"), "CONFIG SET zset-max-listpack-entries 4",
		"ZADD first 1 "+long, enc("first"), "ZADD later 1 a", "ZADD later 2 "+long, enc("later"),
		"ZADD few 1 a", "ZADD few 1 a 1 a 1 a 1 a 1 a", enc("few"),
		"ZINCRBY zi 1 a", enc("zi"), "ZINCRBY zi 1 "+long, enc("zi"),
		"ZADD k1 1 a 2 b 3 c 4 d 5 e", "ZADD k2 1 a", "ZINTERSTORE ki 2 k1 k2", enc("ki"), "ZUNIONSTORE ku 2 k1 k2", enc("ku"),
		"ZDIFFSTORE kd 2 k1 k2", enc("kd"), "ZRANGESTORE kr k1 0 1", enc("kr"), "ZRANGESTORE kr5 k1 0 -1", enc("kr5"),
		"ZREMRANGEBYRANK k1 0 2", enc("k1"), "DEBUG RELOAD", enc("k1"), "ZRANGE k1 0 -1 WITHSCORES",
		"ZADD neg 0 a -0 b 2.5 c -inf d +inf e", "ZRANGE neg 0 -1 WITHSCORES", "ZSCORE neg b",
		"ZADD negbig 0 a -0 b 2.5 c -inf d +inf e 1 f", enc("negbig"), "ZSCORE negbig b",

		// Lists are quicklists in Redis 7.0, whatever their size.
		"RPUSH l a", enc("l"), "RPUSH l b c d e f g", enc("l"), "LRANGE l 0 -1",

		// DUMP of a converted value restores compact when it fits, as Redis loads it.
		"HSET dh a 1 b 2 c 3 d 4 e 5", "HDEL dh a", "RESTORE dh2 0 placeholder",
	)
	// RESTORE needs the DUMP payload of each server: replace the placeholder with a DUMP/RESTORE
	// done on each side below instead.
	cmds = cmds[:len(cmds)-1]
	differentialWith(t, addr, startRedisPeer(t, "--enable-debug-command", "yes"), cmds)

	for _, target := range []string{addr, startRedisPeer(t)} {
		p := dialPeer(t, target)
		p.do("CONFIG", "SET", "hash-max-listpack-entries", "4")
		p.do("HSET", "dh", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
		p.do("HDEL", "dh", "a")
		dump := p.do("DUMP", "dh")
		payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
		if got := p.do("RESTORE", "dh2", "0", payload); got != "+OK\r\n" {
			t.Fatalf("%s: RESTORE: %q", target, got)
		}
		if got := p.do("OBJECT", "ENCODING", "dh2"); got != "$8\r\nlistpack\r\n" {
			t.Errorf("%s: a 4-field hashtable restored as %q, Redis restores it as listpack", target, got)
		}
		p.do("CONFIG", "SET", "hash-max-listpack-entries", "512")
	}
}
