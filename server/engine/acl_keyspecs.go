package engine

// Redis 7.0's key specs for the commands iocache has: where each command's keys are and what it
// does with them, as redis-server 7.0.15 reports them in COMMAND INFO, from which this table was written
// (TestACLKeyPermissionsMatchRedis compares the decisions with redis-server's ACL DRYRUN). ACL checks a key against the patterns that grant what the spec
// needs: read access when the command returns or copies the key's data (ACCESS), write access
// when it inserts, deletes or updates (INSERT, DELETE, UPDATE); a key it only names (EXISTS, TYPE)
// needs a matching pattern of either kind. SORT's BY, GET and STORE, which Redis leaves to the
// command, and the variable flags of SET (GET) and BITFIELD (GET only) are handled in
// aclKeyChecks.

// keySpec is one key spec: begin_search (an index, or the argument after a keyword searched from
// startFrom) and find_keys (a range: lastKey relative to the first key, negative from the end,
// keyStep, limit; or keynum: the count at keyNumIdx, keys from firstKey, keyStep).
type keySpec struct {
	perm      int
	index     int
	keyword   string
	startFrom int
	keynum    bool
	lastKey   int
	keyStep   int
	limit     int
	keyNumIdx int
	firstKey  int
}

var redisKeySpecs = map[string][]keySpec{
	"append":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"bitcount":              {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"bitfield":              {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"bitfield_ro":           {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"bitop":                 {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 3, lastKey: -1, keyStep: 1}},
	"bitpos":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"blmove":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"blmpop":                {{perm: aclRead | aclWrite, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"blpop":                 {{perm: aclRead | aclWrite, index: 1, lastKey: -2, keyStep: 1}},
	"brpop":                 {{perm: aclRead | aclWrite, index: 1, lastKey: -2, keyStep: 1}},
	"brpoplpush":            {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"bzmpop":                {{perm: aclRead | aclWrite, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"bzpopmax":              {{perm: aclRead | aclWrite, index: 1, lastKey: -2, keyStep: 1}},
	"bzpopmin":              {{perm: aclRead | aclWrite, index: 1, lastKey: -2, keyStep: 1}},
	"copy":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"decr":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"decrby":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"del":                   {{perm: aclWrite, index: 1, lastKey: -1, keyStep: 1}},
	"dump":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"eval":                  {{perm: aclRead | aclWrite, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"eval_ro":               {{perm: aclRead, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"evalsha":               {{perm: aclRead | aclWrite, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"evalsha_ro":            {{perm: aclRead, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"exists":                {{perm: 0, index: 1, lastKey: -1, keyStep: 1}},
	"expire":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"expireat":              {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"expiretime":            {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"geoadd":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"geodist":               {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"geohash":               {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"geopos":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"georadius":             {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, keyword: "store", startFrom: 6, lastKey: 0, keyStep: 1}, {perm: aclWrite, keyword: "storedist", startFrom: 6, lastKey: 0, keyStep: 1}},
	"georadius_ro":          {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"georadiusbymember":     {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, keyword: "store", startFrom: 5, lastKey: 0, keyStep: 1}, {perm: aclWrite, keyword: "storedist", startFrom: 5, lastKey: 0, keyStep: 1}},
	"georadiusbymember_ro":  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"geosearch":             {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"geosearchstore":        {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: 0, keyStep: 1}},
	"get":                   {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"getbit":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"getdel":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"getex":                 {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"getrange":              {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"getset":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hdel":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hexists":               {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"hget":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hgetall":               {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hincrby":               {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hincrbyfloat":          {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hkeys":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hlen":                  {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"hmget":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hmset":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hrandfield":            {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hscan":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"hset":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hsetnx":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"hstrlen":               {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"hvals":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"incr":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"incrby":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"incrbyfloat":           {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"lindex":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"linsert":               {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"llen":                  {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"lmove":                 {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"lmpop":                 {{perm: aclRead | aclWrite, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"lpop":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"lpos":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"lpush":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"lpushx":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"lrange":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"lrem":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"lset":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"ltrim":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"memory|usage":          {{perm: 0, index: 2, lastKey: 0, keyStep: 1}},
	"mget":                  {{perm: aclRead, index: 1, lastKey: -1, keyStep: 1}},
	"migrate":               {{perm: aclRead | aclWrite, index: 3, lastKey: 0, keyStep: 1}, {perm: aclRead | aclWrite, keyword: "keys", startFrom: -2, lastKey: -1, keyStep: 1}},
	"move":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"mset":                  {{perm: aclWrite, index: 1, lastKey: -1, keyStep: 2}},
	"msetnx":                {{perm: aclWrite, index: 1, lastKey: -1, keyStep: 2}},
	"object|encoding":       {{perm: 0, index: 2, lastKey: 0, keyStep: 1}},
	"object|freq":           {{perm: 0, index: 2, lastKey: 0, keyStep: 1}},
	"object|idletime":       {{perm: 0, index: 2, lastKey: 0, keyStep: 1}},
	"object|refcount":       {{perm: 0, index: 2, lastKey: 0, keyStep: 1}},
	"persist":               {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"pexpire":               {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"pexpireat":             {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"pexpiretime":           {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"pfadd":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"pfcount":               {{perm: aclRead, index: 1, lastKey: -1, keyStep: 1}},
	"pfmerge":               {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: -1, keyStep: 1}},
	"psetex":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"pttl":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"rename":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"renamenx":              {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"restore":               {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"restore-asking":        {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"rpop":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"rpoplpush":             {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"rpush":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"rpushx":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"sadd":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"scard":                 {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"sdiff":                 {{perm: aclRead, index: 1, lastKey: -1, keyStep: 1}},
	"sdiffstore":            {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: -1, keyStep: 1}},
	"set":                   {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"setbit":                {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"setex":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"setnx":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"setrange":              {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"sinter":                {{perm: aclRead, index: 1, lastKey: -1, keyStep: 1}},
	"sintercard":            {{perm: aclRead, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"sinterstore":           {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: -1, keyStep: 1}},
	"sismember":             {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"smembers":              {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"smismember":            {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"smove":                 {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"sort":                  {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"sort_ro":               {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"spop":                  {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"srandmember":           {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"srem":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"sscan":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"strlen":                {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"substr":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"sunion":                {{perm: aclRead, index: 1, lastKey: -1, keyStep: 1}},
	"sunionstore":           {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: -1, keyStep: 1}},
	"touch":                 {{perm: 0, index: 1, lastKey: -1, keyStep: 1}},
	"ttl":                   {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"type":                  {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"unlink":                {{perm: aclWrite, index: 1, lastKey: -1, keyStep: 1}},
	"watch":                 {{perm: 0, index: 1, lastKey: -1, keyStep: 1}},
	"xack":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"xadd":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"xautoclaim":            {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"xclaim":                {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"xdel":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"xgroup|create":         {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"xgroup|createconsumer": {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"xgroup|delconsumer":    {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"xgroup|destroy":        {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"xgroup|setid":          {{perm: aclWrite, index: 2, lastKey: 0, keyStep: 1}},
	"xinfo|consumers":       {{perm: aclRead, index: 2, lastKey: 0, keyStep: 1}},
	"xinfo|groups":          {{perm: aclRead, index: 2, lastKey: 0, keyStep: 1}},
	"xinfo|stream":          {{perm: aclRead, index: 2, lastKey: 0, keyStep: 1}},
	"xlen":                  {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"xpending":              {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"xrange":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"xread":                 {{perm: aclRead, keyword: "streams", startFrom: 1, lastKey: -1, keyStep: 1, limit: 2}},
	"xreadgroup":            {{perm: aclRead, keyword: "streams", startFrom: 4, lastKey: -1, keyStep: 1, limit: 2}},
	"xrevrange":             {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"xtrim":                 {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zadd":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zcard":                 {{perm: 0, index: 1, lastKey: 0, keyStep: 1}},
	"zcount":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zdiff":                 {{perm: aclRead, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zdiffstore":            {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zincrby":               {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zinter":                {{perm: aclRead, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zintercard":            {{perm: aclRead, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zinterstore":           {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zlexcount":             {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zmpop":                 {{perm: aclRead | aclWrite, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zmscore":               {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zpopmax":               {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zpopmin":               {{perm: aclRead | aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zrange":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrangebylex":           {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrangebyscore":         {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrangestore":           {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, lastKey: 0, keyStep: 1}},
	"zrank":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrem":                  {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zremrangebylex":        {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zremrangebyrank":       {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zremrangebyscore":      {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}},
	"zrevrange":             {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrevrangebylex":        {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrevrangebyscore":      {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zrevrank":              {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zscan":                 {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zscore":                {{perm: aclRead, index: 1, lastKey: 0, keyStep: 1}},
	"zunion":                {{perm: aclRead, index: 1, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
	"zunionstore":           {{perm: aclWrite, index: 1, lastKey: 0, keyStep: 1}, {perm: aclRead, index: 2, keynum: true, keyNumIdx: 0, firstKey: 1, keyStep: 1}},
}

// deniedKey finds the first key of argv the selector may not use as the command uses it, and its
// position in argv (0 when the conservative path below found it).
func (sel *aclSelector) deniedKey(unit *aclUnit, cmd *command, argv [][]byte) (string, int, bool) {
	denied, pos, found := "", 0, false
	check := func(key []byte, perm, at int) bool {
		if !sel.keyAllowed(key, perm) {
			denied, pos, found = string(key), at, true
			return false
		}
		return true
	}
	specs, known := redisKeySpecs[unit.fullname]
	if !known || !walkKeySpecs(specs, cmd, argv, check) {
		// Keys Redis's specs do not place for this argv (a syntax error the command will report)
		// or a command without specs: every key the command names needs full access.
		for _, k := range aclCommandKeys(cmd, argv) {
			if !check(k, aclAll, 0) {
				break
			}
		}
	}
	return denied, pos, found
}

// walkKeySpecs calls fn with each key argv names and the access it needs, until fn returns
// false. It returns false when a spec does not fit argv (Redis's invalid_spec), calling fn for
// no key.
func walkKeySpecs(specs []keySpec, cmd *command, argv [][]byte, fn func(key []byte, perm, pos int) bool) bool {
	type ref struct{ pos, perm int }
	var refs [8]ref
	keys := refs[:0]
	argc := len(argv)
	for _, sp := range specs {
		first := sp.index
		if sp.keyword != "" {
			first = 0
			// As Redis: forwards from startFrom to before the last argument, or, for a negative
			// startFrom, backwards from that far from the end (MIGRATE's KEYS).
			start, end, dir := sp.startFrom, argc-1, 1
			if sp.startFrom < 0 {
				start, end, dir = argc+sp.startFrom, 0, -1
			}
			for i := start; i != end && i >= 1 && i < argc; i += dir {
				if equalFold(argv[i], sp.keyword) {
					first = i + 1
					break
				}
			}
			if first == 0 {
				continue // keyword absent: no keys from this spec
			}
		}
		var last, step int
		if sp.keynum {
			if sp.keyNumIdx >= argc-first {
				return false
			}
			n, ok := parseInt(argv[first+sp.keyNumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return false
			}
			first += sp.firstKey
			last, step = first+int(n)-1, sp.keyStep
		} else {
			step = sp.keyStep
			switch {
			case sp.lastKey >= 0:
				last = first + sp.lastKey
			case sp.limit == 0:
				last = argc + sp.lastKey
			default:
				last = first + (argc-first)/sp.limit + sp.lastKey
			}
		}
		if last >= argc || last < first || first >= argc {
			return false
		}
		for i := first; i <= last; i += step {
			keys = append(keys, ref{i, sp.perm})
		}
	}
	for _, k := range keys {
		perm := k.perm
		switch cmd.name {
		case "set": // SET's flags vary: GET reads the old value
			perm = aclWrite
			if hasArg(argv[3:], "get") {
				perm = aclAll
			}
		case "bitfield":
			if bitfieldReadOnly(argv) {
				perm = aclRead
			}
		}
		if !fn(argv[k.pos], perm, k.pos) {
			return true
		}
	}
	if cmd.name == "sort" { // SORT ... STORE dst, which Redis's sortGetKeys finds
		for i := 2; i+1 < len(argv); i++ {
			if equalFold(argv[i], "store") && !fn(argv[i+1], aclWrite, i+1) {
				return true
			}
		}
	}
	return true
}

// bitfieldReadOnly is Redis's bitfieldGetKeys test: only GET (and OVERFLOW) operations.
func bitfieldReadOnly(argv [][]byte) bool {
	for i := 2; i < len(argv); i++ {
		rem := len(argv) - i - 1
		switch {
		case equalFold(argv[i], "get") && rem >= 2:
			i += 2
		case equalFold(argv[i], "overflow") && rem >= 1:
			i++
		default:
			return false
		}
	}
	return true
}
