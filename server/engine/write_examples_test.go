package engine

import "strings"

// docExamples are invocations of a command built from its COMMAND DOCS arguments (Redis's own
// description of its syntax), one per subcommand of a container: every required argument, each
// once, a key as "d", an integer as 1, a double as 0.01 (a blocking command's timeout), the first
// choice of a oneof. They let TestWritesHaveTheirEffects run a write command nobody wrote an
// example for, so that a new one is covered the day it is added.
func docExamples(name string) [][]string {
	if subs := subcommandNames(name); len(subs) > 0 {
		var out [][]string
		for _, full := range subs {
			if ex := docExample(full); ex != nil {
				out = append(out, ex)
			}
		}
		return out
	}
	if ex := docExample(name); ex != nil {
		return [][]string{ex}
	}
	return nil
}

// docExample is one invocation of a command or subcommand ("xgroup|create") from its docs; nil
// when it has none.
func docExample(fullname string) []string {
	doc := commandDocsEntry(fullname)
	if doc == nil {
		return nil
	}
	out := strings.Split(strings.ToUpper(strings.ReplaceAll(fullname, "|", " ")), " ")
	return appendDocArgs(out, doc.field("arguments"))
}

func appendDocArgs(out []string, args *metaNode) []string {
	if args == nil {
		return out
	}
	for _, a := range args.elems {
		if hasString(a.field("flags").strings(), "optional") {
			continue
		}
		out = appendDocArg(out, a)
	}
	return out
}

func appendDocArg(out []string, a *metaNode) []string {
	if tok := a.field("token"); tok != nil {
		out = append(out, tok.str)
	}
	if t := a.field("type").str; (t == "integer" || t == "unix-time") && strings.Contains(a.field("name").str, "seconds") {
		return append(out, "100000") // a TTL or timeout that does not run out during the test
	}
	switch a.field("type").str {
	case "key":
		return append(out, "d")
	case "integer":
		return append(out, "1")
	case "double":
		return append(out, "0.01") // a blocking command's timeout: short

	case "pattern":
		return append(out, "*")
	case "unix-time":
		return append(out, "4000000000")
	case "pure-token":
		return out
	case "oneof":
		// The first choice that does not read the clock: XADD's explicit ID rather than "*".
		for _, sub := range a.field("arguments").elems {
			if tok := sub.field("token"); tok == nil || tok.str != "*" {
				return appendDocArg(out, sub)
			}
		}
		return out
	case "block":
		return appendDocArgs(out, a.field("arguments"))
	default: // string
		return append(out, "a")
	}
}
