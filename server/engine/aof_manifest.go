package engine

import (
	"path/filepath"

	"github.com/iocache/iocache/server/aof"
)

// Where the AOF's files are. The manifest's format, the files' names and the manifest's atomic
// replacement are package aof; the server passes it the configured directory and
// appendfilename (dir can change under CONFIG SET, so the path is derived at each use).

// aofDir is where the AOF's files live: appenddirname inside dir.
func (s *Server) aofDir() string { return filepath.Join(s.cfg.Dir, s.cfg.AppendDirname) }

func (s *Server) aofPath(name string) string { return filepath.Join(s.aofDir(), name) }

// readManifest loads the manifest: nil when the directory or the manifest does not exist (no
// AOF yet).
func (s *Server) readManifest() (*aof.Manifest, error) {
	return aof.ReadManifest(s.aofDir(), s.cfg.AppendFilename)
}

// persistManifest replaces the manifest file atomically.
func (s *Server) persistManifest(m *aof.Manifest) error {
	return aof.WriteManifest(s.aofDir(), s.cfg.AppendFilename, m)
}
