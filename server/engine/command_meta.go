package engine

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	_ "embed"
)

// Command metadata as Redis 7.0 reports it. redis_commands.resp holds the RESP3 replies of
// `COMMAND INFO` and `COMMAND DOCS` from Debian's redis-server (hack/redis-commands writes it), so
// COMMAND INFO, COMMAND DOCS and the key specs behind COMMAND GETKEYS are Redis's own for every
// command iocache shares with Redis. Commands of iocache's own (BENCHSPACE) are described from
// the command table instead.

//go:embed redis_commands.resp
var redisCommandsRESP []byte

// metaNode is one parsed RESP3 value: kind is its type byte ('*' array, '~' set, '%' map, '+'
// simple string, '$' bulk string, ':' integer); a map's elems alternate keys and values.
type metaNode struct {
	kind  byte
	str   string
	num   int64
	elems []*metaNode
}

// field returns a map's value for key, or nil.
func (n *metaNode) field(key string) *metaNode {
	if n == nil || n.kind != '%' {
		return nil
	}
	for i := 0; i+1 < len(n.elems); i += 2 {
		if n.elems[i].str == key {
			return n.elems[i+1]
		}
	}
	return nil
}

// strings returns the strings of an array or set.
func (n *metaNode) strings() []string {
	if n == nil {
		return nil
	}
	out := make([]string, 0, len(n.elems))
	for _, e := range n.elems {
		out = append(out, e.str)
	}
	return out
}

// write replies with the node; maps and sets become arrays in RESP2, as Redis sends them.
func (n *metaNode) write(c *client) {
	switch n.kind {
	case '*':
		c.w.Array(len(n.elems))
	case '~':
		c.w.Set(len(n.elems))
	case '%':
		c.w.Map(len(n.elems) / 2)
	case '+':
		c.w.Simple(n.str)
		return
	case '$':
		c.w.BulkString(n.str)
		return
	case ':':
		c.w.Int(n.num)
		return
	}
	for _, e := range n.elems {
		e.write(c)
	}
}

// parseMetaNode parses one RESP3 value of the trusted, generated file at b[pos:].
func parseMetaNode(b []byte, pos int) (*metaNode, int) {
	end := pos + bytes.Index(b[pos:], []byte("\r\n"))
	kind, text := b[pos], string(b[pos+1:end])
	pos = end + 2
	n := &metaNode{kind: kind}
	switch kind {
	case '+':
		n.str = text
	case ':':
		n.num, _ = strconv.ParseInt(text, 10, 64)
	case '$':
		size, _ := strconv.Atoi(text)
		n.str = string(b[pos : pos+size])
		pos += size + 2
	case '*', '~', '%':
		count, _ := strconv.Atoi(text)
		if kind == '%' {
			count *= 2
		}
		n.elems = make([]*metaNode, count)
		for i := range n.elems {
			n.elems[i], pos = parseMetaNode(b, pos)
		}
	}
	return n, pos
}

// redisMeta indexes the file by full command name ("get", "config|get").
type redisMeta struct {
	info     map[string]*metaNode // COMMAND INFO entries
	docs     map[string]*metaNode // COMMAND DOCS values (the map after the name)
	keySpecs map[string][]keySpec // the entries' key specs, for GETKEYS and ACL (keyspecs.go)
}

var (
	metaOnce sync.Once
	meta     redisMeta
)

// redisCommandMeta parses the embedded file the first time it is needed.
func redisCommandMeta() *redisMeta {
	metaOnce.Do(func() {
		info, pos := parseMetaNode(redisCommandsRESP, 0)
		docs, _ := parseMetaNode(redisCommandsRESP, pos)
		meta = redisMeta{info: map[string]*metaNode{}, docs: map[string]*metaNode{}, keySpecs: map[string][]keySpec{}}
		var addInfo func(e *metaNode)
		addInfo = func(e *metaNode) {
			meta.info[e.elems[0].str] = e
			meta.keySpecs[e.elems[0].str] = keySpecsOf(e)
			for _, sub := range e.elems[9].elems {
				addInfo(sub)
			}
		}
		for _, e := range info.elems {
			addInfo(e)
		}
		var addDocs func(m *metaNode, prefix string)
		addDocs = func(m *metaNode, prefix string) {
			for i := 0; i+1 < len(m.elems); i += 2 {
				name, doc := m.elems[i].str, m.elems[i+1]
				meta.docs[prefix+name] = doc
				if subs := doc.field("subcommands"); subs != nil {
					addDocs(subs, "")
				}
			}
		}
		addDocs(docs, "")
	})
	return &meta
}

// commandInfoEntry is Redis's COMMAND INFO entry for a full name, or nil.
func commandInfoEntry(name string) *metaNode { return redisCommandMeta().info[name] }

// commandDocsEntry is Redis's COMMAND DOCS value for a full name, or nil.
func commandDocsEntry(name string) *metaNode { return redisCommandMeta().docs[name] }

// subcommandNames are a container's full subcommand names ("config|get"), as Redis lists them.
func subcommandNames(container string) []string {
	e := commandInfoEntry(container)
	if e == nil {
		return nil
	}
	var out []string
	for _, sub := range e.elems[9].elems {
		out = append(out, sub.elems[0].str)
	}
	return out
}

// commandACLCategories are the ACL categories of a command or subcommand (a full name, "get",
// "config|get"), without the '@', as the ACL code assigns them (acl_categories.go).
func commandACLCategories(name string, cmd *command) []string {
	if strings.Contains(name, "|") {
		return entryCategories(commandInfoEntry(name)).Names()
	}
	return commandCategories(cmd).Names()
}
