package engine

// buildCommandTable lists every command with Redis's arity, flags and key positions (as COMMAND
// reports them, so that client libraries and redis-cli route and hint correctly).
func buildCommandTable() map[string]*command {
	const (
		w   = cmdWrite
		r   = cmdReadonly
		oom = cmdDenyOOM
		f   = cmdFast
		adm = cmdAdmin
		ps  = cmdPubSub
		na  = cmdNoAuth
		blk = cmdBlocking
		sub = cmdSubscribed
		nm  = cmdNoMulti
		ld  = cmdLoading
		st  = cmdStale
	)
	type spec struct {
		name             string
		h                func(*Server, *client, [][]byte)
		arity, flags     int
		first, last, stp int
		group            string
		summary          string
	}
	specs := []spec{
		// connection
		{"ping", cmdPing, -1, f | sub | st | ld, 0, 0, 0, "connection", "Returns the server's liveliness response."},
		{"echo", cmdEcho, 2, f | st | ld, 0, 0, 0, "connection", "Returns the given string."},
		{"hello", cmdHello, -1, f | na | st | ld | cmdNoScript, 0, 0, 0, "connection", "Handshakes with the Redis server."},
		{"auth", cmdAuth, -2, f | na | st | ld | cmdNoScript, 0, 0, 0, "connection", "Authenticates the connection."},
		{"select", cmdSelect, 2, f | st | ld, 0, 0, 0, "connection", "Changes the selected database."},
		{"quit", cmdQuit, -1, f | na | sub | st | ld | cmdAllowBusy, 0, 0, 0, "connection", "Closes the connection."},
		{"reset", cmdReset, 1, f | na | sub | st | ld | cmdNoScript, 0, 0, 0, "connection", "Resets the connection."},
		{"client", cmdClient, -2, adm | st | ld | cmdNoScript, 0, 0, 0, "connection", "A container for client connection commands."},
		// server
		{"info", cmdInfo, -1, st | ld, 0, 0, 0, "server", "Returns information and statistics about the server."},
		{"config", cmdConfig, -2, adm | st | ld | cmdNoScript, 0, 0, 0, "server", "A container for server configuration commands."},
		{"command", cmdCommand, -1, st | ld, 0, 0, 0, "server", "Returns detailed information about all commands."},
		{"dbsize", cmdDBSize, 1, r | f, 0, 0, 0, "server", "Returns the number of keys in the database."},
		{"flushdb", cmdFlushDB, -1, w, 0, 0, 0, "server", "Removes all keys from the current database."},
		{"flushall", cmdFlushAll, -1, w, 0, 0, 0, "server", "Removes all keys from all databases."},
		{"swapdb", cmdSwapDB, 3, w | f, 0, 0, 0, "server", "Swaps two Redis databases."},
		{"time", cmdTime, 1, f | st | ld, 0, 0, 0, "server", "Returns the server time."},
		{"shutdown", cmdShutdown, -1, adm | nm | st | ld | cmdNoScript | cmdAllowBusy, 0, 0, 0, "server", "Synchronously saves the database(s) to disk and shuts down the Redis server."},
		{"slowlog", cmdSlowlog, -2, adm | ld | st, 0, 0, 0, "server", "A container for slow log commands."},
		{"lastsave", cmdLastSave, 1, f | ld | st, 0, 0, 0, "server", "Returns the Unix timestamp of the last successful save to disk."},
		{"monitor", cmdMonitor, 1, adm | nm | ld | st | cmdNoScript, 0, 0, 0, "server", "Listens for all requests received by the server in real-time."},
		{"memory", cmdMemory, -2, r, 0, 0, 0, "server", "A container for memory diagnostics commands."},
		{"latency", cmdLatency, -2, adm | ld | st, 0, 0, 0, "server", "A container for latency diagnostics commands."},
		{"debug", cmdDebug, -2, adm | ld | st | cmdNoScript, 0, 0, 0, "server", "A container for debugging commands."},
		{"role", cmdRole, 1, f | ld | st | cmdNoScript, 0, 0, 0, "server", "Returns the replication role."},
		{"wait", cmdWait, 3, blk, 0, 0, 0, "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."},
		// generic keys
		{"del", cmdDel, -2, w, 1, -1, 1, "generic", "Deletes one or more keys."},
		{"unlink", cmdUnlink, -2, w | f, 1, -1, 1, "generic", "Asynchronously deletes one or more keys."},
		{"exists", cmdExists, -2, r | f, 1, -1, 1, "generic", "Determines whether one or more keys exist."},
		{"type", cmdType, 2, r | f, 1, 1, 1, "generic", "Determines the type of value stored at a key."},
		{"rename", cmdRename, 3, w, 1, 2, 1, "generic", "Renames a key and overwrites the destination."},
		{"renamenx", cmdRenameNX, 3, w | f, 1, 2, 1, "generic", "Renames a key only when the target key name doesn't exist."},
		{"expire", cmdExpire, -3, w | f, 1, 1, 1, "generic", "Sets the expiration time of a key in seconds."},
		{"pexpire", cmdPExpire, -3, w | f, 1, 1, 1, "generic", "Sets the expiration time of a key in milliseconds."},
		{"expireat", cmdExpireAt, -3, w | f, 1, 1, 1, "generic", "Sets the expiration time of a key to a Unix timestamp."},
		{"pexpireat", cmdPExpireAt, -3, w | f, 1, 1, 1, "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp."},
		{"ttl", cmdTTL, 2, r | f, 1, 1, 1, "generic", "Returns the expiration time in seconds of a key."},
		{"pttl", cmdPTTL, 2, r | f, 1, 1, 1, "generic", "Returns the expiration time in milliseconds of a key."},
		{"expiretime", cmdExpireTime, 2, r | f, 1, 1, 1, "generic", "Returns the expiration time of a key as a Unix timestamp."},
		{"pexpiretime", cmdPExpireTime, 2, r | f, 1, 1, 1, "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp."},
		{"persist", cmdPersist, 2, w | f, 1, 1, 1, "generic", "Removes the expiration time of a key."},
		{"keys", cmdKeys, 2, r, 0, 0, 0, "generic", "Returns all key names that match a pattern."},
		{"scan", cmdScan, -2, r, 0, 0, 0, "generic", "Iterates over the key names in the database."},
		{"randomkey", cmdRandomKey, 1, r, 0, 0, 0, "generic", "Returns a random key name from the database."},
		{"touch", cmdTouch, -2, r | f, 1, -1, 1, "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed."},
		{"copy", cmdCopy, -3, w | oom, 1, 2, 1, "generic", "Copies the value of a key to a new key."},
		{"move", cmdMove, 3, w | f, 1, 1, 1, "generic", "Moves a key to another database."},
		{"object", cmdObject, -2, r, 2, 2, 1, "generic", "A container for object introspection commands."},
		{"sort", cmdSort, -2, w | oom, 1, 1, 1, "generic", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result."},
		{"sort_ro", cmdSortRO, -2, r, 1, 1, 1, "generic", "Returns the sorted elements of a list, a set, or a sorted set."},
		// strings
		{"get", cmdGet, 2, r | f, 1, 1, 1, "string", "Returns the string value of a key."},
		{"set", cmdSet, -3, w | oom, 1, 1, 1, "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."},
		{"setnx", cmdSetNX, 3, w | oom | f, 1, 1, 1, "string", "Set the string value of a key only when the key doesn't exist."},
		{"setex", cmdSetEX, 4, w | oom, 1, 1, 1, "string", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."},
		{"psetex", cmdPSetEX, 4, w | oom, 1, 1, 1, "string", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."},
		{"getset", cmdGetSet, 3, w | oom | f, 1, 1, 1, "string", "Returns the previous string value of a key after setting it to a new value."},
		{"getdel", cmdGetDel, 2, w | f, 1, 1, 1, "string", "Returns the string value of a key after deleting the key."},
		{"getex", cmdGetEx, -2, w | f, 1, 1, 1, "string", "Returns the string value of a key after setting its expiration time."},
		{"mget", cmdMGet, -2, r | f, 1, -1, 1, "string", "Atomically returns the string values of one or more keys."},
		{"mset", cmdMSet, -3, w | oom, 1, -1, 2, "string", "Atomically creates or modifies the string values of one or more keys."},
		{"msetnx", cmdMSetNX, -3, w | oom, 1, -1, 2, "string", "Atomically modifies the string values of one or more keys only when all keys don't exist."},
		{"append", cmdAppend, 3, w | oom | f, 1, 1, 1, "string", "Appends a string to the value of a key. Creates the key if it doesn't exist."},
		{"strlen", cmdStrlen, 2, r | f, 1, 1, 1, "string", "Returns the length of a string value."},
		{"incr", cmdIncr, 2, w | oom | f, 1, 1, 1, "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		{"decr", cmdDecr, 2, w | oom | f, 1, 1, 1, "string", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		{"incrby", cmdIncrBy, 3, w | oom | f, 1, 1, 1, "string", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
		{"decrby", cmdDecrBy, 3, w | oom | f, 1, 1, 1, "string", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."},
		{"incrbyfloat", cmdIncrByFloat, 3, w | oom | f, 1, 1, 1, "string", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
		{"getrange", cmdGetRange, 4, r, 1, 1, 1, "string", "Returns a substring of the string stored at a key."},
		{"substr", cmdGetRange, 4, r, 1, 1, 1, "string", "Returns a substring from a string value."},
		{"setrange", cmdSetRange, 4, w | oom, 1, 1, 1, "string", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."},
		// lists
		{"lpush", cmdLPush, -3, w | oom | f, 1, 1, 1, "list", "Prepends one or more elements to a list. Creates the key if it doesn't exist."},
		{"rpush", cmdRPush, -3, w | oom | f, 1, 1, 1, "list", "Appends one or more elements to a list. Creates the key if it doesn't exist."},
		{"lpushx", cmdLPushX, -3, w | oom | f, 1, 1, 1, "list", "Prepends one or more elements to a list only when the list exists."},
		{"rpushx", cmdRPushX, -3, w | oom | f, 1, 1, 1, "list", "Appends an element to a list only when the list exists."},
		{"lpop", cmdLPop, -2, w | f, 1, 1, 1, "list", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."},
		{"rpop", cmdRPop, -2, w | f, 1, 1, 1, "list", "Returns and removes the last elements of a list. Deletes the list if the last element was popped."},
		{"llen", cmdLLen, 2, r | f, 1, 1, 1, "list", "Returns the length of a list."},
		{"lrange", cmdLRange, 4, r, 1, 1, 1, "list", "Returns a range of elements from a list."},
		{"lindex", cmdLIndex, 3, r, 1, 1, 1, "list", "Returns an element from a list by its index."},
		{"lset", cmdLSet, 4, w | oom, 1, 1, 1, "list", "Sets the value of an element in a list by its index."},
		{"linsert", cmdLInsert, 5, w | oom, 1, 1, 1, "list", "Inserts an element before or after another element in a list."},
		{"lrem", cmdLRem, 4, w, 1, 1, 1, "list", "Removes elements from a list. Deletes the list if the last element was removed."},
		{"ltrim", cmdLTrim, 4, w, 1, 1, 1, "list", "Removes elements from both ends a list. Deletes the list if all elements were trimmed."},
		{"lpos", cmdLPos, -3, r, 1, 1, 1, "list", "Returns the index of matching elements in a list."},
		{"lmove", cmdLMove, 5, w | oom, 1, 2, 1, "list", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."},
		{"rpoplpush", cmdRPopLPush, 3, w | oom, 1, 2, 1, "list", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."},
		{"blpop", cmdBLPop, -3, w | blk, 1, -2, 1, "list", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."},
		{"lmpop", cmdLMPop, -4, w, 0, 0, 0, "list", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped."},
		{"blmpop", cmdBLMPop, -5, w | blk, 0, 0, 0, "list", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped."},
		{"brpop", cmdBRPop, -3, w | blk, 1, -2, 1, "list", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."},
		{"blmove", cmdBLMove, 6, w | oom | blk, 1, 2, 1, "list", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved."},
		{"brpoplpush", cmdBRPopLPush, 4, w | oom | blk, 1, 2, 1, "list", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."},
		// hashes
		{"hset", cmdHSet, -4, w | oom | f, 1, 1, 1, "hash", "Creates or modifies the value of a field in a hash."},
		{"hmset", cmdHMSet, -4, w | oom | f, 1, 1, 1, "hash", "Sets the values of multiple fields."},
		{"hsetnx", cmdHSetNX, 4, w | oom | f, 1, 1, 1, "hash", "Sets the value of a field in a hash only when the field doesn't exist."},
		{"hget", cmdHGet, 3, r | f, 1, 1, 1, "hash", "Returns the value of a field in a hash."},
		{"hmget", cmdHMGet, -3, r | f, 1, 1, 1, "hash", "Returns the values of all fields in a hash."},
		{"hgetall", cmdHGetAll, 2, r, 1, 1, 1, "hash", "Returns all fields and values in a hash."},
		{"hdel", cmdHDel, -3, w | f, 1, 1, 1, "hash", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."},
		{"hlen", cmdHLen, 2, r | f, 1, 1, 1, "hash", "Returns the number of fields in a hash."},
		{"hexists", cmdHExists, 3, r | f, 1, 1, 1, "hash", "Determines whether a field exists in a hash."},
		{"hkeys", cmdHKeys, 2, r, 1, 1, 1, "hash", "Returns all fields in a hash."},
		{"hvals", cmdHVals, 2, r, 1, 1, 1, "hash", "Returns all values in a hash."},
		{"hincrby", cmdHIncrBy, 4, w | oom | f, 1, 1, 1, "hash", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."},
		{"hincrbyfloat", cmdHIncrByFloat, 4, w | oom | f, 1, 1, 1, "hash", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."},
		{"hstrlen", cmdHStrlen, 3, r | f, 1, 1, 1, "hash", "Returns the length of the value of a field."},
		{"hscan", cmdHScan, -3, r, 1, 1, 1, "hash", "Iterates over fields and values of a hash."},
		{"hrandfield", cmdHRandField, -2, r, 1, 1, 1, "hash", "Returns one or more random fields from a hash."},
		// sets
		{"sadd", cmdSAdd, -3, w | oom | f, 1, 1, 1, "set", "Adds one or more members to a set. Creates the key if it doesn't exist."},
		{"srem", cmdSRem, -3, w | f, 1, 1, 1, "set", "Removes one or more members from a set. Deletes the set if the last member was removed."},
		{"smembers", cmdSMembers, 2, r, 1, 1, 1, "set", "Returns all members of a set."},
		{"sismember", cmdSIsMember, 3, r | f, 1, 1, 1, "set", "Determines whether a member belongs to a set."},
		{"smismember", cmdSMIsMember, -3, r | f, 1, 1, 1, "set", "Determines whether multiple members belong to a set."},
		{"scard", cmdSCard, 2, r | f, 1, 1, 1, "set", "Returns the number of members in a set."},
		{"spop", cmdSPop, -2, w | f, 1, 1, 1, "set", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."},
		{"srandmember", cmdSRandMember, -2, r, 1, 1, 1, "set", "Get one or multiple random members from a set"},
		{"smove", cmdSMove, 4, w | f, 1, 2, 1, "set", "Moves a member from one set to another."},
		{"sinter", cmdSInter, -2, r, 1, -1, 1, "set", "Returns the intersect of multiple sets."},
		{"sunion", cmdSUnion, -2, r, 1, -1, 1, "set", "Returns the union of multiple sets."},
		{"sdiff", cmdSDiff, -2, r, 1, -1, 1, "set", "Returns the difference of multiple sets."},
		{"sinterstore", cmdSInterStore, -3, w | oom, 1, -1, 1, "set", "Stores the intersect of multiple sets in a key."},
		{"sunionstore", cmdSUnionStore, -3, w | oom, 1, -1, 1, "set", "Stores the union of multiple sets in a key."},
		{"sdiffstore", cmdSDiffStore, -3, w | oom, 1, -1, 1, "set", "Stores the difference of multiple sets in a key."},
		{"sintercard", cmdSInterCard, -3, r, 0, 0, 0, "set", "Returns the number of members of the intersect of multiple sets."},
		{"sscan", cmdSScan, -3, r, 1, 1, 1, "set", "Iterates over members of a set."},
		// sorted sets
		{"zadd", cmdZAdd, -4, w | oom | f, 1, 1, 1, "sorted-set", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."},
		{"zincrby", cmdZIncrBy, 4, w | oom | f, 1, 1, 1, "sorted-set", "Increments the score of a member in a sorted set."},
		{"zrem", cmdZRem, -3, w | f, 1, 1, 1, "sorted-set", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."},
		{"zcard", cmdZCard, 2, r | f, 1, 1, 1, "sorted-set", "Returns the number of members in a sorted set."},
		{"zscore", cmdZScore, 3, r | f, 1, 1, 1, "sorted-set", "Returns the score of a member in a sorted set."},
		{"zmscore", cmdZMScore, -3, r | f, 1, 1, 1, "sorted-set", "Returns the score of one or more members in a sorted set."},
		{"zrank", cmdZRank, -3, r | f, 1, 1, 1, "sorted-set", "Returns the index of a member in a sorted set ordered by ascending scores."},
		{"zrevrank", cmdZRevRank, -3, r | f, 1, 1, 1, "sorted-set", "Returns the index of a member in a sorted set ordered by descending scores."},
		{"zcount", cmdZCount, 4, r | f, 1, 1, 1, "sorted-set", "Returns the count of members in a sorted set that have scores within a range."},
		{"zlexcount", cmdZLexCount, 4, r | f, 1, 1, 1, "sorted-set", "Returns the number of members in a sorted set within a lexicographical range."},
		{"zrange", cmdZRange, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of indexes."},
		{"zrangebyscore", cmdZRangeByScore, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of scores."},
		{"zrevrangebyscore", cmdZRevRangeByScore, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of scores in reverse order."},
		{"zrevrange", cmdZRevRange, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of indexes in reverse order."},
		{"zrangebylex", cmdZRangeByLex, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a lexicographical range."},
		{"zrevrangebylex", cmdZRevRangeByLex, -4, r, 1, 1, 1, "sorted-set", "Returns members in a sorted set within a lexicographical range in reverse order."},
		{"zpopmin", cmdZPopMin, -2, w | f, 1, 1, 1, "sorted-set", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."},
		{"zpopmax", cmdZPopMax, -2, w | f, 1, 1, 1, "sorted-set", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."},
		{"bzpopmin", cmdBZPopMin, -3, w | f | blk, 1, -2, 1, "sorted-set", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
		{"zmpop", cmdZMPop, -4, w, 0, 0, 0, "sorted-set", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped."},
		{"bzmpop", cmdBZMPop, -5, w | blk, 0, 0, 0, "sorted-set", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
		{"bzpopmax", cmdBZPopMax, -3, w | f | blk, 1, -2, 1, "sorted-set", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped."},
		{"zremrangebyrank", cmdZRemRangeByRank, 4, w, 1, 1, 1, "sorted-set", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."},
		{"zremrangebyscore", cmdZRemRangeByScore, 4, w, 1, 1, 1, "sorted-set", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."},
		{"zremrangebylex", cmdZRemRangeByLex, 4, w, 1, 1, 1, "sorted-set", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."},
		{"zunionstore", cmdZUnionStore, -4, w | oom, 1, 1, 1, "sorted-set", "Stores the union of multiple sorted sets in a key."},
		// bitmaps
		{"setbit", cmdSetBit, 4, w | oom, 1, 1, 1, "bitmap", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."},
		{"getbit", cmdGetBit, 3, r | f, 1, 1, 1, "bitmap", "Returns a bit value by offset."},
		{"bitcount", cmdBitCount, -2, r, 1, 1, 1, "bitmap", "Counts the number of set bits (population counting) in a string."},
		{"bitpos", cmdBitPos, -3, r, 1, 1, 1, "bitmap", "Finds the first set (1) or clear (0) bit in a string."},
		{"bitop", cmdBitOp, -4, w | oom, 2, -1, 1, "bitmap", "Performs bitwise operations on multiple strings, and stores the result."},
		{"bitfield", cmdBitField, -2, w | oom, 1, 1, 1, "bitmap", "Performs arbitrary bitfield integer operations on strings."},
		{"bitfield_ro", cmdBitFieldRO, -2, r | f, 1, 1, 1, "bitmap", "Performs arbitrary read-only bitfield integer operations on strings."},
		// hyperloglog
		{"pfadd", cmdPFAdd, -2, w | oom | f, 1, 1, 1, "hyperloglog", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."},
		{"pfcount", cmdPFCount, -2, r, 1, -1, 1, "hyperloglog", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."},
		{"pfmerge", cmdPFMerge, -2, w | oom, 1, -1, 1, "hyperloglog", "Merges one or more HyperLogLog values into a single key."},
		// scripting
		{"eval", cmdEval, -3, cmdNoScript | st | cmdSkipMonitor | cmdMayReplicate, 0, 0, 0, "scripting", "Executes a server-side Lua script."},
		{"evalsha", cmdEvalSHA, -3, cmdNoScript | st | cmdSkipMonitor | cmdMayReplicate, 0, 0, 0, "scripting", "Executes a server-side Lua script by SHA1 digest."},
		{"eval_ro", cmdEvalRO, -3, cmdNoScript | st | cmdSkipMonitor | r, 0, 0, 0, "scripting", "Executes a read-only server-side Lua script."},
		{"evalsha_ro", cmdEvalSHARO, -3, cmdNoScript | st | cmdSkipMonitor | r, 0, 0, 0, "scripting", "Executes a read-only server-side Lua script by SHA1 digest."},
		{"script", cmdScript, -2, cmdNoScript, 0, 0, 0, "scripting", "A container for Lua scripts management commands."},
		// streams
		{"xadd", cmdXAdd, -5, w | oom | f, 1, 1, 1, "stream", "Appends a new message to a stream. Creates the key if it doesn't exist."},
		{"xlen", cmdXLen, 2, r | f, 1, 1, 1, "stream", "Return the number of messages in a stream."},
		{"xrange", cmdXRange, -4, r, 1, 1, 1, "stream", "Returns the messages from a stream within a range of IDs."},
		{"xrevrange", cmdXRevRange, -4, r, 1, 1, 1, "stream", "Returns the messages from a stream within a range of IDs in reverse order."},
		{"xdel", cmdXDel, -3, w | f, 1, 1, 1, "stream", "Returns the number of messages after removing them from a stream."},
		{"xtrim", cmdXTrim, -4, w, 1, 1, 1, "stream", "Deletes messages from the beginning of a stream."},
		{"xread", cmdXRead, -4, r | blk, 0, 0, 0, "stream", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."},
		{"xgroup", cmdXGroup, -2, w, 0, 0, 0, "stream", "A container for consumer groups commands."},
		{"xreadgroup", cmdXReadGroup, -7, w | blk, 0, 0, 0, "stream", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise."},
		{"xack", cmdXAck, -4, w | f, 1, 1, 1, "stream", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream."},
		{"xpending", cmdXPending, -3, r, 1, 1, 1, "stream", "Returns the information and entries from a stream consumer group's pending entries list."},
		{"xclaim", cmdXClaim, -6, w | f, 1, 1, 1, "stream", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member."},
		{"xautoclaim", cmdXAutoClaim, -6, w | f, 1, 1, 1, "stream", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member."},
		{"xinfo", cmdXInfo, -2, r, 0, 0, 0, "stream", "A container for stream introspection commands."},
		{"zinterstore", cmdZInterStore, -4, w | oom, 1, 1, 1, "sorted-set", "Stores the intersect of multiple sorted sets in a key."},
		{"zdiffstore", cmdZDiffStore, -4, w | oom, 1, 1, 1, "sorted-set", "Stores the difference of multiple sorted sets in a key."},
		{"zunion", cmdZUnion, -3, r, 0, 0, 0, "sorted-set", "Returns the union of multiple sorted sets."},
		{"zinter", cmdZInter, -3, r, 0, 0, 0, "sorted-set", "Returns the intersect of multiple sorted sets."},
		{"zdiff", cmdZDiff, -3, r, 0, 0, 0, "sorted-set", "Returns the difference between multiple sorted sets."},
		{"zintercard", cmdZInterCard, -3, r, 0, 0, 0, "sorted-set", "Returns the number of members of the intersect of multiple sorted sets."},
		{"zrangestore", cmdZRangeStore, -5, w | oom, 1, 2, 1, "sorted-set", "Stores a range of members from sorted set in a key."},
		{"zscan", cmdZScan, -3, r, 1, 1, 1, "sorted-set", "Iterates over members and scores of a sorted set."},
		// transactions
		{"multi", cmdMulti, 1, f | ld | st | cmdNoScript | cmdAllowBusy, 0, 0, 0, "transactions", "Starts a transaction."},
		{"exec", cmdExec, 1, ld | st | cmdNoScript | cmdSkipMonitor, 0, 0, 0, "transactions", "Executes all commands in a transaction."},
		{"discard", cmdDiscard, 1, f | ld | st | cmdNoScript | cmdAllowBusy, 0, 0, 0, "transactions", "Discards a transaction."},
		{"watch", cmdWatch, -2, f | ld | st | cmdNoScript | cmdAllowBusy, 1, -1, 1, "transactions", "Monitors changes to keys to determine the execution of a transaction."},
		{"unwatch", cmdUnwatch, 1, f | ld | st | cmdNoScript | cmdAllowBusy, 0, 0, 0, "transactions", "Forgets about watched keys of a transaction."},
		// pub/sub
		{"subscribe", cmdSubscribe, -2, ps | ld | st | sub | cmdNoScript, 0, 0, 0, "pubsub", "Listens for messages published to channels."},
		{"unsubscribe", cmdUnsubscribe, -1, ps | ld | st | sub | cmdNoScript, 0, 0, 0, "pubsub", "Stops listening to messages posted to channels."},
		{"psubscribe", cmdPSubscribe, -2, ps | ld | st | sub | cmdNoScript, 0, 0, 0, "pubsub", "Listens for messages published to channels that match one or more patterns."},
		{"punsubscribe", cmdPUnsubscribe, -1, ps | ld | st | sub | cmdNoScript, 0, 0, 0, "pubsub", "Stops listening to messages published to channels that match one or more patterns."},
		{"publish", cmdPublish, 3, ps | ld | st | f | cmdMayReplicate, 0, 0, 0, "pubsub", "Posts a message to a channel."},
		{"pubsub", cmdPubsub, -2, ps | ld | st, 0, 0, 0, "pubsub", "A container for Pub/Sub commands."},
	}
	t := make(map[string]*command, len(specs))
	for _, sp := range specs {
		t[sp.name] = &command{name: sp.name, handler: sp.h, arity: sp.arity, flags: sp.flags,
			firstKey: sp.first, lastKey: sp.last, step: sp.stp, group: sp.group, summary: sp.summary}
	}
	return t
}
