package engine

import "strings"

// docExample is one invocation of a command built from its COMMAND DOCS arguments (Redis's own
// description of its syntax): every required argument, each once, a key as "d", a number as 1,
// the first choice of a oneof. It lets TestWritesHaveTheirEffects run a write command nobody
// wrote an example for. nil when the command has no docs.
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
	switch a.field("type").str {
	case "key":
		return append(out, "d")
	case "integer":
		return append(out, "1")
	case "double":
		return append(out, "1")
	case "pattern":
		return append(out, "*")
	case "unix-time":
		return append(out, "4000000000")
	case "pure-token":
		return out
	case "oneof":
		if subs := a.field("arguments"); subs != nil && len(subs.elems) > 0 {
			return appendDocArg(out, subs.elems[0])
		}
		return out
	case "block":
		return appendDocArgs(out, a.field("arguments"))
	default: // string
		return append(out, "a")
	}
}
