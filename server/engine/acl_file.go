package engine

// Users from the configuration, as Redis 7.0 reads them: `user <name> <rules...>` lines in the
// config file, or an aclfile (one such line per user, acl.Users.ParseFile) that ACL LOAD reads
// again and ACL SAVE writes; not both. A file with any error changes nothing, and says every
// error, in Redis's words. Here is what needs the Server: the files, the config's lines, and the
// connections of the users a change removes or restricts.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/iocache/iocache/server/acl"
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
		if err := acl.CheckName(name); err != nil {
			return fail(err.Error())
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
		u, err := s.acl.users.FromRules(name, rules)
		if err != nil {
			return fail(err.Error())
		}
		s.acl.users.Install(u)
	}
	s.authRequired.Store(!s.defaultAuthenticated())
	return nil
}

// loadACLFile reads the aclfile and, when every line is right, replaces all users with its own
// (a default user absent from the file gets the default rules). It returns Redis's error text, or
// "" on success. Connections of users the file drops are closed, and subscribers of users it
// keeps lose what their new rules deny.
func (s *Server) loadACLFile() string {
	path := s.cfg.ACLFile
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", path, syscallText(err))
	}
	users, err := s.acl.users.ParseFile(path, data)
	if err != nil {
		return err.Error()
	}
	for _, old := range s.acl.users.Replace(users) {
		s.dropUser(old, nil)
	}
	for _, u := range users {
		s.killRevokedSubscribers(s.acl.users.Get(u.Name()), nil)
	}
	s.authRequired.Store(!s.defaultAuthenticated())
	return ""
}

// saveACLFile writes every user, as ACL LIST shows them, to the aclfile: a temporary file first,
// renamed over it, so a crash leaves the old file or the new one.
func (s *Server) saveACLFile() error {
	var b strings.Builder
	for _, n := range s.acl.users.Names() {
		b.WriteString("user " + n + " " + s.acl.users.Describe(s.acl.users.Get(n)) + "\n")
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
func (s *Server) dropUser(u *acl.User, current *client) {
	for _, x := range s.clients {
		if x.user != u {
			continue
		}
		x.user, x.authed = s.acl.users.Default(), false
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
