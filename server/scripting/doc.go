// Package scripting holds what Redis's scripting is made of that does not need the server:
// for now, the "#!lua" shebang of EVAL scripts and its flags. The engine runs the commands
// (EVAL, FCALL, SCRIPT, FUNCTION) and applies what the flags mean.
//
// It may import the packages below it (lualib, resp, version) and never server/engine.
package scripting
