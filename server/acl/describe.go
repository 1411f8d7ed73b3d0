package acl

// How users are described, as ACL LIST, ACL GETUSER and ACL SAVE print them: flags, password
// hashes, key and channel patterns, and command rules rebuilt from the permission bitmap the
// way Redis 7.0 rebuilds them. A description read back as rules gives the same user.

import (
	"encoding/hex"
	"strings"
)

// Details is a user as ACL GETUSER shows it.
type Details struct {
	Flags     []string // on or off, nopass, sanitize-payload or skip-sanitize-payload
	Passwords []string // the SHA-256 hash of each password, in hex, in the order added
	Root      SelectorDetails
	Selectors []SelectorDetails // those of "(...)" rules, in the order added
}

// SelectorDetails is a selector's rules, as ACL GETUSER shows them: "-@all +get", "~a* %R~b*",
// "&ch*", each "" when empty.
type SelectorDetails struct {
	Commands, Keys, Channels string
}

// Details describes u's rules field by field.
func (us *Users) Details(u *User) Details {
	d := Details{Flags: u.flagNames(), Passwords: make([]string, len(u.passwords)),
		Root: us.selectorDetails(&u.selector), Selectors: make([]SelectorDetails, len(u.selectors))}
	for i, p := range u.passwords {
		d.Passwords[i] = hex.EncodeToString(p)
	}
	for i, sel := range u.selectors {
		d.Selectors[i] = us.selectorDetails(sel)
	}
	return d
}

func (us *Users) selectorDetails(sel *selector) SelectorDetails {
	return SelectorDetails{Commands: us.describeCommands(sel), Keys: sel.describeKeys(), Channels: sel.describeChannels()}
}

// Describe is u's rules as ACL LIST prints them after "user <name> " (and ACL SAVE writes
// them): flags, passwords, the root selector, then each other selector in parentheses.
func (us *Users) Describe(u *User) string {
	var b strings.Builder
	for _, f := range u.flagNames() {
		b.WriteString(f + " ")
	}
	for _, p := range u.passwords {
		b.WriteString("#" + hex.EncodeToString(p) + " ")
	}
	b.WriteString(us.describeSelector(&u.selector))
	for _, sel := range u.selectors {
		b.WriteString(" (" + us.describeSelector(sel) + ")")
	}
	return b.String()
}

func (u *User) flagNames() []string {
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

func (sel *selector) describeKeys() string {
	if sel.allKeys {
		return "~*"
	}
	parts := make([]string, len(sel.keys))
	for i, k := range sel.keys {
		switch k.perm {
		case Read:
			parts[i] = "%R~" + k.pattern
		case Write:
			parts[i] = "%W~" + k.pattern
		default:
			parts[i] = "~" + k.pattern
		}
	}
	return strings.Join(parts, " ")
}

func (sel *selector) describeChannels() string {
	if sel.allChannels {
		return "&*"
	}
	parts := make([]string, len(sel.channels))
	for i, ch := range sel.channels {
		parts[i] = "&" + ch
	}
	return strings.Join(parts, " ")
}

func (us *Users) describeSelector(sel *selector) string {
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
	b.WriteString(us.describeCommands(sel))
	return b.String()
}

// describeCommands rebuilds a selector's command rules from its bitmap as Redis 7.0 does: +@all
// or -@all, then the categories that fit best, one at a time, then single commands to make the
// bitmap exact. Redis emits the single commands in its hash table's order; here they come
// sorted by name.
func (us *Users) describeCommands(sel *selector) string {
	t := us.table
	fakeSel := us.newSelector()
	fake := &fakeSel
	var rules []string
	additive := !sel.bit(t.futureBit())
	if additive {
		rules = append(rules, "-@all")
		_ = us.applySelectorRule(fake, "-@all")
	} else {
		rules = append(rules, "+@all")
		_ = us.applySelectorRule(fake, "+@all")
	}
	tempSel := sel.clone()
	temp := &tempSel
	var applied Categories
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range categoryNames {
			if applied&(1<<j) != 0 {
				continue
			}
			on, off := 0, 0
			for _, unit := range t.units {
				if unit.categories&(1<<j) == 0 {
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
		t.changeCategory(fake, 1<<best, additive)
		t.changeCategory(temp, 1<<best, !additive)
		sign := "+@"
		if !additive {
			sign = "-@"
		}
		rules = append(rules, sign+categoryNames[best])
		applied |= 1 << best
	}
	for _, unit := range t.order {
		userBit, fakeBit := sel.bit(unit.id), fake.bit(unit.id)
		if userBit != fakeBit {
			sign := "-"
			if userBit {
				sign = "+"
			}
			rules = append(rules, sign+unit.name)
			t.changePerm(fake, unit, userBit)
		}
		if !userBit {
			for _, a := range sel.firstArgs[unit.id] {
				rules = append(rules, "+"+unit.name+"|"+a)
			}
		}
	}
	return strings.Join(rules, " ")
}
