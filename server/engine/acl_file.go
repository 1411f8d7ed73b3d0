package engine

// Users from the configuration, as Redis 7.0 reads them: `user <name> <rules...>` lines in the
// config file, or an aclfile (one such line per user) that ACL LOAD reads again and ACL SAVE
// writes; not both. A file with any error changes nothing, and says every error, in Redis's words.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/iocache/iocache/server/config"
)

// loadConfiguredUsers applies the config file's user lines, or the aclfile, at start.
func (s *Server) loadConfiguredUsers() error {
	if len(s.cfg.Users) > 0 && s.cfg.ACLFile != "" {
		return errors.New("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	if s.cfg.ACLFile != "" {
		if msg := s.loadACLFile(); msg != "" {
			return errors.New("Aborting Redis startup because of ACL errors: " + msg)
		}
		return nil
	}
	seen := map[string]bool{}
	for _, line := range s.cfg.Users {
		fail := func(msg string) error {
			return &config.FileError{Line: line.Line, Text: line.Text, Message: msg}
		}
		name := line.Args[0]
		if hasSpace(name) {
			return fail("Usernames can't contain spaces or null characters")
		}
		if seen[name] {
			return fail("Error in user declaration '" + name + "': Duplicate user found. A user can only be defined once in config files")
		}
		seen[name] = true
		rules := line.Args[1:]
		if name == "default" {
			// Redis resets the default user before applying its line.
			rules = append([]string{"reset"}, rules...)
		}
		u, err := s.acl.userFromRules(name, rules)
		if err != nil {
			return fail(err.Error())
		}
		s.acl.install(u)
	}
	s.authRequired.Store(!s.defaultAuthenticated())
	return nil
}

// userFromRules builds a user from its rules: the default user starts from its reset state, as
// in Redis's ACLLoadConfiguredUsers.
func (st *aclState) userFromRules(name string, rules []string) (*aclUser, error) {
	rules, err := mergeSelectorArgs(rules)
	if err != nil {
		return nil, err
	}
	u := st.newUser(name)
	for _, r := range rules {
		if err := st.applyRule(u, r); err != nil {
			return nil, fmt.Errorf("Error in applying operation '%s': %s", truncate(r, 128), err.Error())
		}
	}
	return u, nil
}

// install puts a user in the table; a user of that name already there keeps its identity, so that
// its connections stay (and are bound by the new rules).
func (st *aclState) install(u *aclUser) {
	if old := st.users[u.name]; old != nil {
		old.assign(u)
		return
	}
	st.users[u.name] = u
}

// loadACLFile reads the aclfile and, when every line is right, replaces all users with its own
// (a default user absent from the file gets the default rules). It returns Redis's error text, or
// "" on success. Connections of users the file drops are closed.
func (s *Server) loadACLFile() string {
	path := s.cfg.ACLFile
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", path, syscallText(err))
	}
	var errs strings.Builder
	users := map[string]*aclUser{}
	seen := map[string]bool{} // also the users whose line has an error, as Redis counts them
	for i, text := range strings.Split(string(data), "\n") {
		lineno := i + 1
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		argv, err := config.SplitArgs(text)
		if err != nil || len(argv) < 2 || argv[0] != "user" || hasSpace(argv[1]) {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, lineno)
			continue
		}
		if seen[argv[1]] {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], lineno)
			continue
		}
		seen[argv[1]] = true
		u, err := s.acl.userFromRules(argv[1], argv[2:])
		if err != nil {
			fmt.Fprintf(&errs, "%s:%d: %s. ", path, lineno, err.Error())
			continue
		}
		users[argv[1]] = u
	}
	if errs.Len() > 0 {
		return errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	if users["default"] == nil {
		users["default"] = s.acl.newDefaultUser()
	}
	for name, old := range s.acl.users {
		if users[name] == nil {
			s.dropUser(old, nil)
		}
	}
	for name := range s.acl.users {
		if users[name] == nil {
			delete(s.acl.users, name)
		}
	}
	for _, u := range users {
		s.acl.install(u)
		s.killRevokedSubscribers(s.acl.users[u.name], nil)
	}
	s.authRequired.Store(!s.defaultAuthenticated())
	return ""
}

// saveACLFile writes every user, as ACL LIST shows them, to the aclfile: a temporary file first,
// renamed over it, so a crash leaves the old file or the new one.
func (s *Server) saveACLFile() error {
	var b strings.Builder
	for _, n := range s.aclUserNames() {
		b.WriteString("user " + n + " " + s.acl.describeUser(s.acl.users[n]) + "\n")
	}
	dir, base := filepath.Split(s.cfg.ACLFile)
	f, err := os.CreateTemp(dir, base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }() // after the rename, there is nothing left to remove
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), s.cfg.ACLFile)
}

// dropUser points the connections of a removed user at the default user, unauthenticated, and
// closes them; current (the client deleting it, if one of them) is closed after its reply.
func (s *Server) dropUser(u *aclUser, current *client) {
	for _, x := range s.clients {
		if x.user != u {
			continue
		}
		x.user, x.authed = s.acl.defaultUser, false
		if x == current {
			x.flags |= flagCloseAfterReply
		} else {
			s.killClient(x)
		}
	}
}

// syscallText is an OS error as strerror words it ("No such file or directory").
func syscallText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := err.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}
