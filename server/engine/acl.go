package engine

// The server's side of ACL. The model (users, rules, the permission check, descriptions) is
// package acl; here is what it needs of the server: its units numbered from the command table
// (acl_categories.go), and for each call the unit, keys and channels the table and key specs say
// it names (acl_keyspecs.go). The ACL and AUTH commands are acl_cmd.go, user lines and the
// aclfile acl_file.go, the log and denied commands' replies acl_log.go.
//
// The hot path pays one branch: call() checks permissions only when the client's user is
// restricted (not allcommands, allkeys and allchannels at once), which the default user is not.

import "github.com/iocache/iocache/server/acl"

// aclState is the server's user table and what checks and the security log keep.
type aclState struct {
	users *acl.Users
	table *acl.Table
	// units are the commands' units, by the command: every name of a command (renamed, or
	// looked up by a script) is the same *command.
	units map[*command]*acl.Unit
	// found and keys are the keys of the call being checked, kept between checks so that a
	// check allocates nothing for them once they have grown (the main thread checks one call
	// at a time).
	found []foundKey
	keys  []acl.Key
	log   aclLog
	// requirepass is the value last applied to the default user (nil before the first).
	requirepass *string
	// Denials counted for INFO stats (Redis 7.2's acl_access_denied_* fields).
	deniedAuth, deniedCmd, deniedKey, deniedChannel int64
}

func newACLState(builtin map[string]*command) aclState {
	table, units := buildACLTable(builtin)
	return aclState{users: acl.NewUsers(table), table: table, units: units}
}

// aclCheck reports whether u may run argv (cmd found by its name), and when it may not, why and
// what it was refused (acl.User.Check).
func (s *Server) aclCheck(u *acl.User, cmd *command, argv [][]byte) (acl.Reason, string) {
	st := &s.acl
	unit := st.units[cmd].Called(argv)
	st.found, st.keys = appendACLKeys(st.found[:0], st.keys[:0], unit.Name(), cmd, argv)
	call := acl.Call{Unit: unit, Args: argv, Keys: st.keys, Channels: commandChannels(cmd, argv), ChannelPatterns: cmd.name == "psubscribe"}
	reason, object := u.Check(&call)
	// Let go of the arguments: the buffers outlive the call.
	clear(st.found)
	clear(st.keys)
	return reason, object
}

// commandChannels are the channels a command publishes or subscribes to (unsubscribing needs no
// permission, as in Redis).
func commandChannels(cmd *command, argv [][]byte) [][]byte {
	switch cmd.name {
	case "publish", "spublish":
		return argv[1:2]
	case "subscribe", "psubscribe", "ssubscribe":
		return argv[1:]
	}
	return nil
}
