package controllers

import cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"

// LegacyRestartHash is the config hash an operator before issue #30 put on the pod template of
// ci, for the tests of package controllers_test that stand in for such an operator.
func LegacyRestartHash(ci *cachev1alpha1.CacheInstance) (string, error) {
	cfg, err := renderConfig(ci)
	if err != nil {
		return "", err
	}
	return cfg.LegacyRestartHash, nil
}
