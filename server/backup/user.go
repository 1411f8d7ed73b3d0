package backup

// UserName is the ACL user an operator-managed instance keeps for its backup Jobs: the Jobs
// never hold the default user's password, which reads and changes every key and setting.
const UserName = "iocache-backup"

// ACLRules are the backup user's rules after "on" and its password: what a Source sends (AUTH,
// INFO server, REPLCONF, PSYNC) and nothing else. It names no key and no channel, so a leaked
// password of a backup pod changes nothing; it can read the whole dataset, as any backup must.
func ACLRules() []string {
	return []string{"resetchannels", "resetkeys", "-@all", "+auth", "+hello", "+ping", "+info", "+replconf", "+psync", "+sync"}
}
