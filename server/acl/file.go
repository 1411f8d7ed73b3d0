package acl

// Users from an aclfile, as Redis 7.0 reads one: a `user <name> <rules...>` line per user, blank
// lines skipped. A file with any error changes nothing, and says every error, in Redis's words.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iocache/iocache/server/config"
)

// ParseFile reads the users of an aclfile's text (path only names the file in errors). When
// every line is right it returns them, with the default user as Redis creates it when the file
// has none, for Replace; otherwise an error that lists every wrong line, as ACL LOAD reports it
// (without "ERR ").
func (us *Users) ParseFile(path string, data []byte) ([]*User, error) {
	var errs strings.Builder
	var users []*User
	seen := map[string]bool{} // also the users whose line has an error, as Redis counts them
	hasDefault := false
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
		u, err := us.FromRules(argv[1], argv[2:])
		if err != nil {
			fmt.Fprintf(&errs, "%s:%d: %s. ", path, lineno, err.Error())
			continue
		}
		users = append(users, u)
		hasDefault = hasDefault || u.name == "default"
	}
	if errs.Len() > 0 {
		return nil, errors.New(errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	}
	if !hasDefault {
		users = append(users, us.newDefaultUser())
	}
	return users, nil
}
