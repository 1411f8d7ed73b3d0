package config

import "fmt"

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
