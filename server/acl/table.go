package acl

import "sort"

// Command describes one command of the server's table to NewTable.
type Command struct {
	// Name is the command's original name, in lower case: rules name commands so, whatever
	// rename-command made of them, as in Redis.
	Name       string
	Categories Categories
	// NoAuth marks a command a client may run before it authenticates (AUTH, HELLO...): no
	// rule denies it.
	NoAuth bool
	// Subcommands are a container's (CONFIG, CLIENT...): every one Redis has, also those the
	// server answers with an error, so that rules written for Redis are accepted.
	Subcommands []Subcommand
}

// Subcommand is one subcommand of a container, by its own name ("get" of CONFIG).
type Subcommand struct {
	Name       string
	Categories Categories
}

// Unit is what rules allow or deny: a command, or one subcommand of a container ("config|get").
// Each has a bit in every selector's permission bitmap.
type Unit struct {
	id         int
	name       string // "get", "config|get"
	categories Categories
	noAuth     bool
	parent     *Unit            // a subcommand's container; nil for a command
	subs       map[string]*Unit // a container's subcommands, by lower-case name
}

// Name is the unit's full name as rules and ACL replies write it: "get", "config|get".
func (u *Unit) Name() string { return u.name }

// Called is the unit a call of u names: its subcommand args[1] (in any case) when u is a
// container that has it, else u. args[0] is the command's name. It allocates nothing for a
// subcommand name of up to 32 bytes.
func (u *Unit) Called(args [][]byte) *Unit {
	if u.subs == nil || len(args) < 2 {
		return u
	}
	var buf [32]byte
	var lower []byte
	if arg := args[1]; len(arg) <= len(buf) {
		lower = buf[:len(arg)]
		copy(lower, arg)
	} else {
		lower = append([]byte(nil), arg...)
	}
	for i, ch := range lower {
		if ch >= 'A' && ch <= 'Z' {
			lower[i] = ch + 'a' - 'A'
		}
	}
	if sub := u.subs[string(lower)]; sub != nil {
		return sub
	}
	return u
}

// Table numbers every command and subcommand of the server once, at start. It does not change
// afterwards: users' bitmaps are sized by it.
type Table struct {
	units  []*Unit // by id: the commands by name, then each container's subcommands
	byName map[string]*Unit
	// order is the order of descriptions and ACL CAT: commands by name, each container
	// followed by its subcommands by name.
	order []*Unit
}

// NewTable numbers the server's commands and their subcommands.
func NewTable(cmds []Command) *Table {
	cmds = append([]Command(nil), cmds...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	t := &Table{byName: map[string]*Unit{}}
	add := func(name string, cats Categories, noAuth bool, parent *Unit) *Unit {
		u := &Unit{id: len(t.units), name: name, categories: cats, noAuth: noAuth, parent: parent}
		t.units = append(t.units, u)
		t.byName[name] = u
		return u
	}
	tops := make([]*Unit, len(cmds))
	for i, c := range cmds {
		tops[i] = add(c.Name, c.Categories, c.NoAuth, nil)
	}
	for i, c := range cmds {
		top := tops[i]
		for _, sub := range c.Subcommands {
			if top.subs == nil {
				top.subs = map[string]*Unit{}
			}
			top.subs[sub.Name] = add(c.Name+"|"+sub.Name, sub.Categories, c.NoAuth, top)
		}
	}
	t.order = make([]*Unit, 0, len(t.units))
	for _, top := range tops {
		t.order = append(t.order, top)
		subs := make([]*Unit, 0, len(top.subs))
		for _, sub := range top.subs {
			subs = append(subs, sub)
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
		t.order = append(t.order, subs...)
	}
	return t
}

// Unit is the command or subcommand of that full name ("get", "config|get"), or nil.
func (t *Table) Unit(name string) *Unit { return t.byName[name] }

// Members are the full names of the commands and subcommands in any of the categories c, as
// ACL CAT lists them.
func (t *Table) Members(c Categories) []string {
	var names []string
	for _, u := range t.order {
		if u.categories&c != 0 {
			names = append(names, u.name)
		}
	}
	return names
}

// bitmapWords is the length of a selector's bitmap: a bit per unit, and the "future commands"
// bit (futureBit).
func (t *Table) bitmapWords() int { return (len(t.units) + 1 + 63) / 64 }

// futureBit is the bitmap position +@all sets and no command has: whether the rules began with
// +@all (all commands, also those added later) or -@all.
func (t *Table) futureBit() int { return len(t.units) }

// changePerm allows or denies a unit; a container's change applies to its subcommands too.
func (t *Table) changePerm(sel *selector, unit *Unit, allow bool) {
	sel.setBit(unit.id, allow)
	delete(sel.firstArgs, unit.id)
	for _, sub := range unit.subs {
		sel.setBit(sub.id, allow)
	}
}

// changeCategory allows or denies every unit of a category, walking commands as Redis does: a
// container in the category changes with all its subcommands, then each subcommand by its own.
func (t *Table) changeCategory(sel *selector, cats Categories, allow bool) {
	for _, unit := range t.units {
		if unit.categories&cats != 0 {
			t.changePerm(sel, unit, allow)
		}
	}
}
