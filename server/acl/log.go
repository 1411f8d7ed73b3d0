package acl

// ACL LOG's entries, as Redis 7.0 keeps them: similar denials within a minute are counted in
// one entry. The log that holds them (its length, acllog-max-len) is the server's.

// Denial is one refused request: why, where (the context: "toplevel", "multi", "lua"), what
// (a command's full name, a key, a channel, or AUTH or HELLO for a failed authentication) and
// the user's name.
type Denial struct {
	Reason                    Reason
	Context, Object, Username string
}

// LogEntry is one ACL LOG entry: a denial, how many times it happened, when last, and the
// CLIENT LIST line of the client it happened to last.
type LogEntry struct {
	Denial
	Count      int64
	UpdatedMs  int64
	ClientInfo string
}

// LogGroupMs is how close in time a denial must be to an equal one to be counted in it.
const LogGroupMs = 60000

// NewLogEntry is the entry of a first denial, at nowMs. The object and user name are kept to
// 128 bytes, as Redis keeps them.
func NewLogEntry(d Denial, nowMs int64, clientInfo string) LogEntry {
	d.Object, d.Username = truncate(d.Object, 128), truncate(d.Username, 128)
	return LogEntry{Denial: d, Count: 1, UpdatedMs: nowMs, ClientInfo: clientInfo}
}

// Merge counts d in e when it is the same denial within LogGroupMs of e's last, and reports
// whether it did. d is compared as it came, before the cut NewLogEntry makes, so a denial with
// a longer object or user name starts an entry of its own.
func (e *LogEntry) Merge(d Denial, nowMs int64, clientInfo string) bool {
	if e.Denial != d || nowMs-e.UpdatedMs >= LogGroupMs {
		return false
	}
	e.Count++
	e.UpdatedMs, e.ClientInfo = nowMs, clientInfo
	return true
}
