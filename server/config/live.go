package config

import (
	"fmt"
	"strings"
)

// Live reports whether CONFIG SET changes the directive on a running server: it is known, mutable
// and not protected. The operator applies such directives to running pods and restarts pods only
// for the others.
func Live(name string) bool {
	d, ok := table[canonicalName(name)]
	return ok && d.mutable && !d.protected
}

// Expected is the value CONFIG GET reports for the directive once the config-file line
// "name value" is in effect, so that a value written one way ("100mb") can be compared with what a
// server reports ("104857600").
func Expected(name, value string) (string, error) {
	args, err := SplitArgs(value)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	c := New()
	if err := c.Set(name, args, false); err != nil {
		return "", fmt.Errorf("%s %s: %w", name, value, err)
	}
	d := table[canonicalName(name)]
	if d.get == nil {
		return "", nil // a file-only directive: CONFIG GET does not report it
	}
	return d.get(c), nil
}

// Default is the directive's value on a server whose config file does not set it, written as a
// config-file value (quoted where it must be): the value to set live when a directive leaves a
// rendered config, so that the running server ends as a fresh start from the new file would. ok
// is false for a directive the server does not know or that CONFIG GET does not report.
func Default(name string) (value string, ok bool) {
	d, known := table[canonicalName(name)]
	if !known || d.get == nil || d.fileOnly {
		return "", false
	}
	v := d.get(New())
	if d.multiArg && v != "" {
		return v, true // several arguments, each without spaces (save points, buffer limits)
	}
	return quoteArg(v), true
}

// quoteArg writes one argument so that SplitArgs reads it back whole.
func quoteArg(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\r\n\"'\\") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(v) + `"`
}
