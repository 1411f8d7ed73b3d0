package engine

// The ACL command and AUTH's side of users (authenticate, requirepass as the default user's
// password), with Redis 7.0's replies and error texts. The users, their rules and how they are
// printed are package acl's; acl_log.go is the security log.

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/resp"
)

// authenticate checks a username and password (user "" is the default user), logs a failure
// without the password (object is the command, AUTH or HELLO), and on success makes c that user.
func (s *Server) authenticate(c *client, object, user string, pass []byte) bool {
	if user == "" {
		user = "default"
	}
	u := s.acl.users.Get(user)
	if u == nil || !u.CheckPassword(pass) {
		context := "toplevel"
		if c.flags&flagMulti != 0 {
			context = "multi"
		}
		s.addACLLog(c, acl.DeniedAuth, context, object, user)
		s.logf(logVerbose, "AUTH failed for client id=%d addr=%s user=%s", c.id, c.addr, truncate(user, 128))
		return false
	}
	c.user, c.authed = u, true
	return true
}

// defaultAuthenticated is whether a new connection starts authenticated: the default user is on
// and needs no password.
func (s *Server) defaultAuthenticated() bool {
	d := s.acl.users.Default()
	return d.Enabled() && d.NoPass()
}

// syncDefaultUser applies requirepass to the default user when it changed (at start and on
// CONFIG SET), as Redis does: resetpass, then the password or nopass.
func (s *Server) syncDefaultUser() {
	if s.acl.requirepass != nil && *s.acl.requirepass == s.cfg.RequirePass {
		return
	}
	pass := s.cfg.RequirePass
	s.acl.requirepass = &pass
	s.acl.users.SetRequirePass(pass)
	s.authRequired.Store(!s.defaultAuthenticated())
}

// The ACL subcommands' arities, as Redis's command table has them.
var aclArity = map[string]int{"cat": -2, "deluser": -3, "dryrun": -4, "genpass": -2, "getuser": 3, "help": 2,
	"list": 2, "load": 2, "log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2}

func cmdACL(s *Server, c *client, argv [][]byte) {
	sub := lowerASCII(string(argv[1]))
	arity, known := aclArity[sub]
	if !known {
		s.addError(c, "ERR unknown subcommand '"+truncate(string(argv[1]), 128)+"'. Try ACL HELP.")
		return
	}
	if (arity > 0 && len(argv) != arity) || len(argv) < -arity || (sub == "cat" || sub == "genpass" || sub == "log") && len(argv) > 3 {
		s.addError(c, "ERR wrong number of arguments for 'acl|"+sub+"' command")
		return
	}
	switch sub {
	case "whoami":
		c.w.BulkString(c.user.Name())
	case "users":
		names := s.acl.users.Names()
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
	case "list":
		names := s.acl.users.Names()
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString("user " + n + " " + s.acl.users.Describe(s.acl.users.Get(n)))
		}
	case "getuser":
		s.aclGetUser(c, string(argv[2]))
	case "setuser":
		s.aclSetUser(c, argv[2:])
	case "deluser":
		s.aclDelUser(c, argv[2:])
	case "cat":
		s.aclCat(c, argv[2:])
	case "genpass":
		s.aclGenPass(c, argv[2:])
	case "dryrun":
		s.aclDryRun(c, argv[2:])
	case "log":
		s.aclLogCommand(c, argv[2:])
	case "load", "save":
		if s.cfg.ACLFile != "" {
			s.aclLoadSave(c, sub)
			return
		}
		s.addError(c, "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
	case "help":
		writeHelp(c, "ACL", []string{
			"CAT [<category>]", "    List all commands that belong to <category>, or all command categories", "    when no category is specified.",
			"DELUSER <username> [<username> ...]", "    Delete a list of users.",
			"DRYRUN <username> <command> [<arg> ...]", "    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>", "    Get the user's details.",
			"GENPASS [<bits>]", "    Generate a secure 256-bit user password. The optional `bits` argument can", "    be used to specify a different size.",
			"LIST", "    Show users details in config file format.",
			"LOAD", "    Reload users from the ACL file.",
			"LOG [<count> | RESET]", "    Show the ACL log entries.",
			"SAVE", "    Save the current config to the ACL file.",
			"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
			"USERS", "    List all the registered usernames.",
			"WHOAMI", "    Return the current connection username.",
		})
	}
}

func (s *Server) aclLoadSave(c *client, sub string) {
	if sub == "load" {
		if msg := s.loadACLFile(); msg != "" {
			s.addError(c, "ERR "+msg)
			return
		}
		c.w.OK()
		return
	}
	if err := s.saveACLFile(); err != nil {
		s.logf(logWarning, "Saving the ACL file %s: %v", s.cfg.ACLFile, err)
		s.addError(c, "ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.w.OK()
}

// aclSetUser applies the rules to the user, all or none of them (acl.Users.SetUser); the
// subscribers of a user that existed lose what its new rules deny.
func (s *Server) aclSetUser(c *client, args [][]byte) {
	rules := make([]string, len(args)-1)
	for i, a := range args[1:] {
		rules[i] = string(a)
	}
	u, created, err := s.acl.users.SetUser(string(args[0]), rules)
	if err != nil {
		s.addError(c, "ERR "+err.Error())
		return
	}
	if !created {
		s.killRevokedSubscribers(u, c)
	}
	if u == s.acl.users.Default() {
		s.authRequired.Store(!s.defaultAuthenticated())
	}
	c.w.OK()
}

// aclDelUser removes users and closes the connections authenticated as them.
func (s *Server) aclDelUser(c *client, names [][]byte) {
	for _, n := range names {
		if string(n) == "default" {
			s.addError(c, "ERR The 'default' user cannot be removed")
			return
		}
	}
	deleted := 0
	for _, n := range names {
		if u := s.acl.users.Delete(string(n)); u != nil {
			deleted++
			s.dropUser(u, c)
		}
	}
	c.w.Int(int64(deleted))
}

// killRevokedSubscribers closes the connections of u subscribed to a channel or pattern its
// rules no longer allow, as Redis does after ACL SETUSER and ACL LOAD.
func (s *Server) killRevokedSubscribers(u *acl.User, current *client) {
	for _, x := range s.clients {
		if x.user != u || x.subscriptions() == 0 || !x.subscribedBeyond(u) {
			continue
		}
		if x == current {
			x.flags |= flagCloseAfterReply
		} else {
			s.killClient(x)
		}
	}
}

// subscribedBeyond reports whether the client listens to a channel, shard channel or pattern u may
// not.
func (x *client) subscribedBeyond(u *acl.User) bool {
	for ch := range x.channels {
		if !u.MayUseChannel([]byte(ch), false) {
			return true
		}
	}
	for p := range x.patterns {
		if !u.MayUseChannel([]byte(p), true) {
			return true
		}
	}
	for ch := range x.shardChannels {
		if !u.MayUseChannel([]byte(ch), false) {
			return true
		}
	}
	return false
}

func (s *Server) aclGetUser(c *client, name string) {
	u := s.acl.users.Get(name)
	if u == nil {
		c.w.Null()
		return
	}
	d := s.acl.users.Details(u)
	c.w.Map(6)
	c.w.BulkString("flags")
	c.w.Set(len(d.Flags))
	for _, f := range d.Flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("passwords")
	c.w.Array(len(d.Passwords))
	for _, p := range d.Passwords {
		c.w.BulkString(p)
	}
	writeSelector(c, d.Root)
	c.w.BulkString("selectors")
	c.w.Array(len(d.Selectors))
	for _, sel := range d.Selectors {
		c.w.Map(3)
		writeSelector(c, sel)
	}
}

// writeSelector writes a selector's commands, keys and channels fields of ACL GETUSER.
func writeSelector(c *client, sel acl.SelectorDetails) {
	c.w.BulkString("commands")
	c.w.BulkString(sel.Commands)
	c.w.BulkString("keys")
	c.w.BulkString(sel.Keys)
	c.w.BulkString("channels")
	c.w.BulkString(sel.Channels)
}

func (s *Server) aclCat(c *client, args [][]byte) {
	if len(args) == 0 {
		names := acl.AllCategories.Names()
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
		return
	}
	cat := acl.Category(string(args[0]))
	if cat == 0 {
		s.addError(c, "ERR Unknown category '"+truncate(string(args[0]), 128)+"'")
		return
	}
	names := s.acl.table.Members(cat)
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

func (s *Server) aclGenPass(c *client, args [][]byte) {
	bits := int64(256)
	if len(args) == 1 {
		v, ok := s.intArg(c, args[0])
		if !ok {
			return
		}
		if v <= 0 || v > 4096 {
			s.addError(c, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = v
	}
	chars := int((bits + 3) / 4)
	raw := make([]byte, (chars+1)/2)
	if _, err := rand.Read(raw); err != nil {
		s.addError(c, "ERR can't read random bytes: "+err.Error())
		return
	}
	c.w.BulkString(hex.EncodeToString(raw)[:chars])
}

func (s *Server) aclDryRun(c *client, args [][]byte) {
	u := s.acl.users.Get(string(args[0]))
	if u == nil {
		s.addError(c, "ERR User '"+truncate(string(args[0]), 128)+"' not found")
		return
	}
	argv := args[1:]
	cmd := s.lookupCommand(argv[0])
	if cmd == nil {
		s.addError(c, "ERR Command '"+truncate(string(argv[0]), 128)+"' not found")
		return
	}
	if (cmd.arity > 0 && len(argv) != cmd.arity) || len(argv) < -cmd.arity {
		s.wrongArgs(c, cmd.name)
		return
	}
	switch reason, object := s.aclCheck(u, cmd, argv); reason {
	case acl.Allowed:
		c.w.OK()
	case acl.DeniedCommand:
		c.w.BulkString("This user has no permissions to run the '" + object + "' command")
	case acl.DeniedKey:
		c.w.BulkString("This user has no permissions to access the '" + object + "' key")
	default:
		c.w.BulkString("This user has no permissions to access the '" + object + "' channel")
	}
}

func (s *Server) aclLogCommand(c *client, args [][]byte) {
	count := int64(10)
	if len(args) == 1 {
		if resp.EqualFold(args[0], "reset") {
			s.acl.log.entries.Reset()
			c.w.OK()
			return
		}
		v, ok := s.intArg(c, args[0])
		if !ok {
			return
		}
		count = max(v, 0)
	}
	n := s.acl.log.entries.Len()
	if int64(n) > count {
		n = int(count)
	}
	c.w.Array(n)
	for i := 0; i < n; i++ {
		e := s.acl.log.entries.At(i)
		c.w.Map(7)
		c.w.BulkString("count")
		c.w.Int(e.Count)
		c.w.BulkString("reason")
		c.w.BulkString(e.Reason.String())
		c.w.BulkString("context")
		c.w.BulkString(e.Context)
		c.w.BulkString("object")
		c.w.BulkString(e.Object)
		c.w.BulkString("username")
		c.w.BulkString(e.Username)
		c.w.BulkString("age-seconds")
		c.w.Double(float64(s.nowMs-e.UpdatedMs) / 1000)
		c.w.BulkString("client-info")
		c.w.BulkString(e.ClientInfo)
	}
}

var aclCommands = []commandSpec{
	{name: "acl", h: cmdACL, own: cmdAdmin | cmdNoScript | cmdStale}, // a container: Redis flags its subcommands
}
