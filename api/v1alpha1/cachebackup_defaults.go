package v1alpha1

// SetDefaults fills the fields the schema defaults; it only fills what is empty.
func (b *CacheBackup) SetDefaults() {
	if b.Spec.Target == "" {
		b.Spec.Target = BackupPreferReplica
	}
	if b.Spec.Trigger == "" {
		b.Spec.Trigger = BackupManual
	}
}

// SetDefaults fills the fields the schema defaults.
func (b *BackupSpec) SetDefaults() {
	if b.Target == "" {
		b.Target = BackupPreferReplica
	}
}
