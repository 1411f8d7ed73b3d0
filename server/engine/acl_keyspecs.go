package engine

// ACL key checks follow Redis 7.0's key specs, found where COMMAND GETKEYS finds them
// (keyspecs.go, from Redis's own COMMAND INFO): a key needs read access when the command returns
// or copies its data (ACCESS), write access when it inserts, deletes or updates (INSERT, DELETE,
// UPDATE), and a key the command only names (EXISTS, TYPE) needs a matching pattern of either
// kind. TestACLKeyPermissionsMatchRedis compares the decisions with redis-server's ACL DRYRUN.

// deniedKey finds the first key of argv the selector may not use as the command uses it, and its
// position in argv (0 when the conservative path below found it).
func (sel *aclSelector) deniedKey(unit *aclUnit, cmd *command, argv [][]byte) (string, int, bool) {
	var buf [8]foundKey // the keys of most commands, without an allocation
	keys, ok := appendKeys(buf[:0], unit.fullname, argv)
	if !ok {
		// Keys Redis's specs do not place for this argv (a syntax error the command will report)
		// or a command without specs: every key the command names needs full access.
		for _, k := range aclCommandKeys(cmd, argv) {
			if !sel.keyAllowed(k, aclAll) {
				return string(k), 0, true
			}
		}
		return "", 0, false
	}
	for _, k := range keys {
		if !sel.keyAllowed(k.key, k.perm) {
			return string(k.key), k.pos, true
		}
	}
	return "", 0, false
}
