// Package acl is the ACL model of Redis 7.0, without a server: users, their selectors of
// permissions (the commands and subcommands a user may run, the keys it may name with read and
// write patterns, the Pub/Sub channels), the rules of ACL SETUSER and of user lines and aclfiles
// that change them, password hashes, the permission check of one call, and the description of
// users that ACL LIST, ACL GETUSER and ACL SAVE print. ACL LOG's entries are here too; the log
// itself, the replies to a denied command and the clients of a user are the server's.
//
// It knows nothing of the server's command table. The server describes its commands once, at
// start, to NewTable (names, categories, subcommands), and for each call hands Check a Call:
// the Unit called, the arguments, and the keys and channels it found in them with its own key
// specs. So rules can be read, parsed, described and checked by tests that start no server.
//
// It may import glob (key and channel patterns), config (SplitArgs, the quoting of user lines
// and selectors) and resp (EqualFold, for arguments) and nothing else of this module; server/engine imports it. The types
// are not safe for concurrent use: the server's main thread owns them.
package acl
