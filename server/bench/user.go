package bench

// The user a benchmark Job authenticates as. The operator creates it on every server of an
// instance with exactly these rules, and the Job runs with --user UserName --key-prefix KeyPrefix
// --benchspace. Two fences then keep a benchmark off the user's data: the bench space (a keyspace
// of its own, BENCHSPACE ENTER) and, should a connection ever miss it, the ACL, which lets this
// user name no key outside KeyPrefix and run no command a benchmark does not send. Its password,
// mounted into a Job's pod, is worth no user data and no administration.
const (
	UserName  = "iocache-bench"
	KeyPrefix = "iocache-bench:"
)

// ACLRules are the user's permissions after its on/off state and password, as ACL SETUSER takes
// them: the commands iocache-bench sends (the tests', AUTH, INFO for the server's counters,
// BENCHSPACE), keys under KeyPrefix, no channel.
func ACLRules() []string {
	return []string{
		"resetchannels", "resetkeys", "~" + KeyPrefix + "*", "-@all",
		"+auth", "+hello", "+ping", "+echo", "+quit", "+info", "+benchspace",
		"+get", "+set", "+incr", "+lpush", "+del", "+exists", "+dbsize",
	}
}
