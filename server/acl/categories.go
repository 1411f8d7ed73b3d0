package acl

import "strings"

// Categories is a set of ACL categories (@read, @write...), one bit per category in Redis's
// order. A command's categories decide what +@category and -@category rules change.
type Categories uint32

// categoryNames is Redis's ACLCommandCategories, in its order: ACL CAT lists them so, and the
// description of a selector's command rules tries them so.
var categoryNames = [...]string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

// AllCategories is every category there is; AllCategories.Names() is what ACL CAT lists.
const AllCategories Categories = 1<<len(categoryNames) - 1

// Category is the category of that name, in any case and without its '@', or 0 when there is
// none of that name.
func Category(name string) Categories {
	for i, n := range categoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// Names lists the categories of c without their '@', in Redis's order (that of ACL CAT and
// COMMAND INFO).
func (c Categories) Names() []string {
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}
