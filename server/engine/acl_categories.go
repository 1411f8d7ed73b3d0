package engine

// ACL categories, as Redis 7.0 assigns them: for every command and subcommand Redis has, the
// categories its COMMAND INFO entry lists (command_meta.go), so that ACL rules, ACL CAT and
// COMMAND INFO agree by construction. Container commands (CONFIG, CLIENT, OBJECT...) are @slow
// themselves; their subcommands carry categories of their own, and ACL rules name them as
// "config|get" (every subcommand Redis has, also those iocache's handler answers with the
// unknown-subcommand error, so that rules written for Redis are accepted). Commands of iocache's
// own (BENCHSPACE) get categories computed from their flags and group as Redis would.
// TestACLCategoriesMatchRedis compares every command's with Debian's redis-server.

import (
	"strings"

	"github.com/iocache/iocache/server/acl"
)

// groupCategory is the category a command group implies.
var groupCategory = map[string]string{"string": "string", "list": "list", "set": "set", "sorted-set": "sortedset",
	"hash": "hash", "bitmap": "bitmap", "hyperloglog": "hyperloglog", "geo": "geo", "stream": "stream",
	"pubsub": "pubsub", "generic": "keyspace", "transactions": "transaction", "scripting": "scripting",
	"connection": "connection"}

// commandCategories are a command's categories: those of its COMMAND INFO entry, or, for a
// command Redis does not have, those its flags and group imply.
func commandCategories(cmd *command) acl.Categories {
	if e := commandInfoEntry(cmd.name); e != nil {
		return entryCategories(e)
	}
	var c acl.Categories
	if cmd.flags&cmdWrite != 0 {
		c |= acl.Category("write")
	}
	if cmd.flags&cmdReadonly != 0 && cmd.group != "scripting" {
		c |= acl.Category("read")
	}
	if cmd.flags&cmdAdmin != 0 {
		c |= acl.Category("admin") | acl.Category("dangerous")
	}
	if cmd.flags&cmdPubSub != 0 {
		c |= acl.Category("pubsub")
	}
	if cmd.flags&cmdFast != 0 {
		c |= acl.Category("fast")
	}
	if cmd.flags&cmdBlocking != 0 {
		c |= acl.Category("blocking")
	}
	c |= acl.Category(groupCategory[cmd.group])
	if c&acl.Category("fast") == 0 {
		c |= acl.Category("slow")
	}
	return c
}

// entryCategories are the categories a COMMAND INFO entry lists ("@write", "@hash", ...).
func entryCategories(e *metaNode) acl.Categories {
	var c acl.Categories
	for _, name := range e.elems[6].elems {
		c |= acl.Category(strings.TrimPrefix(name.str, "@"))
	}
	return c
}

// buildACLTable describes every command to package acl once, at start, by original name
// (renames do not change what a rule names, as in Redis, whose rules name original commands),
// with every subcommand Redis has for the containers iocache has; units finds each command's
// unit by the command.
func buildACLTable(builtin map[string]*command) (table *acl.Table, units map[*command]*acl.Unit) {
	cmds := make([]acl.Command, 0, len(builtin))
	for name, cmd := range builtin {
		c := acl.Command{Name: name, Categories: commandCategories(cmd), NoAuth: cmd.flags&cmdNoAuth != 0}
		for _, full := range subcommandNames(name) {
			_, sub, _ := strings.Cut(full, "|")
			c.Subcommands = append(c.Subcommands, acl.Subcommand{Name: sub, Categories: entryCategories(commandInfoEntry(full))})
		}
		cmds = append(cmds, c)
	}
	table = acl.NewTable(cmds)
	units = make(map[*command]*acl.Unit, len(builtin))
	for name, cmd := range builtin {
		units[cmd] = table.Unit(name)
	}
	return table, units
}
