package engine

// How users are described, as ACL LIST, ACL GETUSER and ACL SAVE print them: flags, password
// hashes, key and channel patterns, and command rules rebuilt from the permission bitmap the
// way Redis 7.0 rebuilds them.

import (
	"encoding/hex"
	"sort"
	"strings"
)

func (u *aclUser) flagNames() []string {
	flags := []string{"off"}
	if u.enabled {
		flags[0] = "on"
	}
	if u.nopass {
		flags = append(flags, "nopass")
	}
	switch u.sanitize {
	case 2:
		flags = append(flags, "skip-sanitize-payload")
	case 1:
		flags = append(flags, "sanitize-payload")
	}
	return flags
}

func (sel *aclSelector) describeKeys() string {
	if sel.allKeys {
		return "~*"
	}
	parts := make([]string, len(sel.keys))
	for i, k := range sel.keys {
		switch k.perm {
		case aclRead:
			parts[i] = "%R~" + k.pattern
		case aclWrite:
			parts[i] = "%W~" + k.pattern
		default:
			parts[i] = "~" + k.pattern
		}
	}
	return strings.Join(parts, " ")
}

func (sel *aclSelector) describeChannels() string {
	if sel.allChannels {
		return "&*"
	}
	parts := make([]string, len(sel.channels))
	for i, ch := range sel.channels {
		parts[i] = "&" + ch
	}
	return strings.Join(parts, " ")
}

// describeUser is a user's rules as ACL LIST prints them after "user <name> ": flags,
// passwords, the root selector, then each other selector in parentheses.
func (st *aclState) describeUser(u *aclUser) string {
	var b strings.Builder
	for _, f := range u.flagNames() {
		b.WriteString(f + " ")
	}
	for _, p := range u.passwords {
		b.WriteString("#" + hex.EncodeToString(p) + " ")
	}
	b.WriteString(st.describeSelector(&u.aclSelector))
	for _, sel := range u.selectors {
		b.WriteString(" (" + st.describeSelector(sel) + ")")
	}
	return b.String()
}

func (st *aclState) describeSelector(sel *aclSelector) string {
	var b strings.Builder
	if keys := sel.describeKeys(); keys != "" {
		b.WriteString(keys + " ")
	}
	if !sel.allChannels {
		b.WriteString("resetchannels ")
	}
	if ch := sel.describeChannels(); ch != "" {
		b.WriteString(ch + " ")
	}
	b.WriteString(st.describeCommands(sel))
	return b.String()
}

// describeCommands rebuilds a selector's command rules from its bitmap as Redis 7.0 does: +@all
// or -@all, then the categories that fit best, one at a time, then single commands to make the
// bitmap exact. Redis emits the single commands in its hash table's order; here they come
// sorted by name.
func (st *aclState) describeCommands(sel *aclSelector) string {
	fakeSel := st.newSelector()
	fake := &fakeSel
	var rules []string
	additive := !sel.bit(st.futureBit())
	if additive {
		rules = append(rules, "-@all")
		_ = st.applySelectorRule(fake, "-@all")
	} else {
		rules = append(rules, "+@all")
		_ = st.applySelectorRule(fake, "+@all")
	}
	tempSel := sel.clone()
	temp := &tempSel
	applied := make([]bool, len(aclCategories))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range aclCategories {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for _, unit := range st.table.units {
				if unit.cats&(1<<j) == 0 {
					continue
				}
				if temp.bit(unit.id) {
					on++
				} else {
					off++
				}
			}
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		st.changeCategory(fake, 1<<best, additive)
		st.changeCategory(temp, 1<<best, !additive)
		sign := "+@"
		if !additive {
			sign = "-@"
		}
		rules = append(rules, sign+aclCategories[best])
		applied[best] = true
	}
	for _, unit := range st.table.describeOrder() {
		userBit, fakeBit := sel.bit(unit.id), fake.bit(unit.id)
		if userBit != fakeBit {
			sign := "-"
			if userBit {
				sign = "+"
			}
			rules = append(rules, sign+unit.fullname)
			st.changePerm(fake, unit, userBit)
		}
		if !userBit {
			for _, a := range sel.firstArgs[unit.id] {
				rules = append(rules, "+"+unit.fullname+"|"+a)
			}
		}
	}
	return strings.Join(rules, " ")
}

// describeOrder lists commands by name, each container followed by its subcommands.
func (t *aclTable) describeOrder() []*aclUnit {
	out := make([]*aclUnit, 0, len(t.units))
	for _, u := range t.units {
		if t.top[u.cmd] != u {
			continue
		}
		out = append(out, u)
		subs := make([]*aclUnit, 0, len(t.subs[u.cmd]))
		for _, sub := range t.subs[u.cmd] {
			subs = append(subs, sub)
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].fullname < subs[j].fullname })
		out = append(out, subs...)
	}
	return out
}
