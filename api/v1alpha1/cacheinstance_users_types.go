package v1alpha1

// UserSpec is an ACL user of the instance, besides the default user that spec.auth protects.
// +kubebuilder:validation:XValidation:rule="self.name != 'default'",message="users[].name cannot be default: the default user is the one spec.auth's password protects"
// +kubebuilder:validation:XValidation:rule="!self.name.startsWith('iocache-')",message="users[].name cannot start with iocache-: the operator keeps those names for its own users (iocache-bench, the benchmark Jobs' user)"
// +kubebuilder:validation:XValidation:rule="!has(self.permissions) || self.permissions.split(' ').all(r, !(r.startsWith('>') || r.startsWith('<') || r.startsWith('#') || r.startsWith('!') || r.lowerAscii() in ['nopass', 'resetpass', 'on', 'off', 'reset']))",message="users[].permissions are ACL rules for commands, keys and channels (such as ~cache:* +@read -@dangerous); passwords come from passwordSecret, and on/off from enabled, so >, <, #, !, nopass, resetpass, on, off and reset are not allowed here"
type UserSpec struct {
	// Name of the user, as clients send it: AUTH <name> <password>, HELLO 3 AUTH <name> <password>.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$`
	Name string `json:"name"`

	// PasswordSecret names a Secret in the instance's namespace whose every key holds a valid
	// password of the user: several keys are several passwords, so a password is rotated by adding
	// a key with the new one, moving the clients to it, and removing the old key. The operator reads
	// the Secret every 30 seconds and changes the running servers live; only SHA-256 hashes of the
	// passwords leave the operator (into the Secret <instance>-users, which the pods mount).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PasswordSecret string `json:"passwordSecret"`

	// Permissions are Redis ACL rules, separated by spaces: commands and categories (+@read,
	// -@dangerous, +config|get), key patterns (~cache:*, %R~*, allkeys) and channel patterns
	// (&events:*, allchannels). The user starts with none: "~cache:* +@read +@write" lets it read
	// and write the keys under cache: and nothing else.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Permissions string `json:"permissions,omitempty"`

	// Enabled false turns the user off: it can no longer authenticate (true by default).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// IsEnabled is true unless enabled is false.
func (u *UserSpec) IsEnabled() bool { return u.Enabled == nil || *u.Enabled }
