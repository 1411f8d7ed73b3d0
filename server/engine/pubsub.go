package engine

import (
	"sort"
	"strconv"

	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/resp"
)

// pubsubState holds channel and pattern subscriptions and MONITOR clients. Subscribers stay on
// their I/O threads; the main thread sends them messages as out-of-band output.
type pubsubState struct {
	channels      map[string]map[*client]struct{}
	patterns      map[string]map[*client]struct{}
	shardChannels map[string]map[*client]struct{} // pubsub_shard.go
	monitors      []*client
}

func (p *pubsubState) removeMonitor(c *client) {
	for i, m := range p.monitors {
		if m == c {
			p.monitors = append(p.monitors[:i], p.monitors[i+1:]...)
			return
		}
	}
}

// subscriptionReply writes ["subscribe", channel, count] and its kin.
func subscriptionReply(w *resp.Writer, kind string, name []byte, count int, nullName bool) {
	w.Push(3)
	w.BulkString(kind)
	if nullName {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(count))
}

func (s *Server) updatePubSubFlag(c *client) {
	if c.subscriptions()+len(c.shardChannels) > 0 {
		c.flags |= flagPubSub
	} else {
		c.flags &^= flagPubSub
	}
}

func cmdSubscribe(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti != 0 {
		s.addError(c, "ERR SUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	if s.pubsub.channels == nil {
		s.pubsub.channels = map[string]map[*client]struct{}{}
	}
	for _, ch := range argv[1:] {
		name := string(ch)
		if c.channels == nil {
			c.channels = map[string]struct{}{}
		}
		if _, ok := c.channels[name]; !ok {
			c.channels[name] = struct{}{}
			subs := s.pubsub.channels[name]
			if subs == nil {
				subs = map[*client]struct{}{}
				s.pubsub.channels[name] = subs
			}
			subs[c] = struct{}{}
		}
		subscriptionReply(c.w, "subscribe", ch, c.subscriptions(), false)
	}
	s.updatePubSubFlag(c)
}

func cmdPSubscribe(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti != 0 {
		s.addError(c, "ERR PSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	if s.pubsub.patterns == nil {
		s.pubsub.patterns = map[string]map[*client]struct{}{}
	}
	for _, p := range argv[1:] {
		name := string(p)
		if c.patterns == nil {
			c.patterns = map[string]struct{}{}
		}
		if _, ok := c.patterns[name]; !ok {
			c.patterns[name] = struct{}{}
			subs := s.pubsub.patterns[name]
			if subs == nil {
				subs = map[*client]struct{}{}
				s.pubsub.patterns[name] = subs
			}
			subs[c] = struct{}{}
		}
		subscriptionReply(c.w, "psubscribe", p, c.subscriptions(), false)
	}
	s.updatePubSubFlag(c)
}

func (s *Server) unsubscribeChannel(c *client, name string, notify bool) {
	if _, ok := c.channels[name]; !ok {
		if notify {
			subscriptionReply(c.w, "unsubscribe", []byte(name), c.subscriptions(), false)
		}
		return
	}
	delete(c.channels, name)
	if subs := s.pubsub.channels[name]; subs != nil {
		delete(subs, c)
		if len(subs) == 0 {
			delete(s.pubsub.channels, name)
		}
	}
	if notify {
		subscriptionReply(c.w, "unsubscribe", []byte(name), c.subscriptions(), false)
	}
}

func (s *Server) unsubscribePattern(c *client, name string, notify bool) {
	if _, ok := c.patterns[name]; ok {
		delete(c.patterns, name)
		if subs := s.pubsub.patterns[name]; subs != nil {
			delete(subs, c)
			if len(subs) == 0 {
				delete(s.pubsub.patterns, name)
			}
		}
	}
	if notify {
		subscriptionReply(c.w, "punsubscribe", []byte(name), c.subscriptions(), false)
	}
}

// pubsubUnsubscribeAll drops every subscription of c (on close, RESET).
func (s *Server) pubsubUnsubscribeAll(c *client, notify bool) {
	for _, name := range sortedKeys(c.channels) {
		s.unsubscribeChannel(c, name, notify)
	}
	for _, name := range sortedKeys(c.patterns) {
		s.unsubscribePattern(c, name, notify)
	}
	for _, name := range sortedKeys(c.shardChannels) {
		s.unsubscribeShardChannel(c, name, notify)
	}
	s.updatePubSubFlag(c)
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func cmdUnsubscribe(s *Server, c *client, argv [][]byte) {
	if len(argv) == 1 {
		if len(c.channels) == 0 {
			subscriptionReply(c.w, "unsubscribe", nil, c.subscriptions(), true)
		}
		for _, name := range sortedKeys(c.channels) {
			s.unsubscribeChannel(c, name, true)
		}
	} else {
		for _, ch := range argv[1:] {
			s.unsubscribeChannel(c, string(ch), true)
		}
	}
	s.updatePubSubFlag(c)
}

func cmdPUnsubscribe(s *Server, c *client, argv [][]byte) {
	if len(argv) == 1 {
		if len(c.patterns) == 0 {
			subscriptionReply(c.w, "punsubscribe", nil, c.subscriptions(), true)
		}
		for _, name := range sortedKeys(c.patterns) {
			s.unsubscribePattern(c, name, true)
		}
	} else {
		for _, p := range argv[1:] {
			s.unsubscribePattern(c, string(p), true)
		}
	}
	s.updatePubSubFlag(c)
}

// publish delivers a message to channel subscribers and matching pattern subscribers and returns
// how many received it.
func (s *Server) publish(channel, message []byte) int {
	receivers := 0
	var msg2, msg3 []byte
	encode := func(resp3 bool) []byte {
		if resp3 {
			if msg3 == nil {
				w := resp.Writer{RESP3: true}
				w.Push(3)
				w.BulkString("message")
				w.Bulk(channel)
				w.Bulk(message)
				msg3 = w.Buf
			}
			return msg3
		}
		if msg2 == nil {
			w := resp.Writer{}
			w.Push(3)
			w.BulkString("message")
			w.Bulk(channel)
			w.Bulk(message)
			msg2 = w.Buf
		}
		return msg2
	}
	for sub := range s.pubsub.channels[string(channel)] {
		s.pushTo(sub, encode(sub.w.RESP3))
		receivers++
	}
	for pattern, subs := range s.pubsub.patterns {
		if !glob.Match([]byte(pattern), channel, false) {
			continue
		}
		for sub := range subs {
			w := resp.Writer{RESP3: sub.w.RESP3}
			w.Push(4)
			w.BulkString("pmessage")
			w.BulkString(pattern)
			w.Bulk(channel)
			w.Bulk(message)
			s.pushTo(sub, w.Buf)
			receivers++
		}
	}
	s.stats.pubsubMessages++
	return receivers
}

func cmdPublish(s *Server, c *client, argv [][]byte) {
	c.w.Int(int64(s.publish(argv[1], argv[2])))
}

func cmdPubsub(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "channels") && len(argv) <= 3:
		var names []string
		for name := range s.pubsub.channels {
			if len(argv) == 2 || glob.MatchString(string(argv[2]), name, false) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
	case resp.EqualFold(sub, "numsub"):
		c.w.Array(2 * (len(argv) - 2)) // an array in RESP3 too, as Redis 7.0 sends it
		for _, ch := range argv[2:] {
			c.w.Bulk(ch)
			c.w.Int(int64(len(s.pubsub.channels[string(ch)])))
		}
	case resp.EqualFold(sub, "numpat") && len(argv) == 2:
		c.w.Int(int64(len(s.pubsub.patterns)))
	case resp.EqualFold(sub, "shardchannels") && len(argv) <= 3:
		var pattern []byte
		if len(argv) == 3 {
			pattern = argv[2]
		}
		s.pubsubShardChannels(c, pattern)
	case resp.EqualFold(sub, "shardnumsub"):
		s.pubsubShardNumSub(c, argv[2:])
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "PUBSUB", []string{
			"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT", "    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]", "    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]", "    Return the number of subscribers for the specified shard level channel(s)",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// feedMonitors sends a command to MONITOR clients, formatted as Redis does:
// +1700000000.123456 [0 127.0.0.1:5555] "SET" "key" "value"
func (s *Server) feedMonitors(c *client, argv [][]byte) {
	argv = redactSecrets(argv)
	var b []byte
	b = append(b, '+')
	now := nanotimeWall()
	b = strconv.AppendInt(b, now/1e9, 10)
	b = append(b, '.')
	us := (now / 1000) % 1e6
	b = append(b, []byte(strconv.FormatInt(1e6+us, 10))[1:]...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(c.db), 10)
	b = append(b, ' ')
	b = append(b, c.addr...)
	b = append(b, ']')
	for _, a := range argv {
		b = append(b, ' ')
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	for _, m := range s.pubsub.monitors {
		if m != c {
			s.pushTo(m, b)
		}
	}
}

// appendRepr quotes a string as Redis's sdscatrepr does.
func appendRepr(b, s []byte) []byte {
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch < 32 || ch > 126 {
				b = append(b, '\\', 'x', "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			} else {
				b = append(b, ch)
			}
		}
	}
	return append(b, '"')
}

func cmdMonitor(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti != 0 {
		s.addError(c, "ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.flags&flagMonitor != 0 {
		return
	}
	c.flags |= flagMonitor
	s.pubsub.monitors = append(s.pubsub.monitors, c)
	c.w.OK()
}

// pubsubCommands registers this file's commands (see table.go).
var pubsubCommands = []commandSpec{
	{name: "monitor", h: cmdMonitor, own: cmdNoMulti},              // iocache's: refused inside MULTI when queued
	{name: "subscribe", h: cmdSubscribe, own: cmdSubscribed},       // allowed in RESP2 subscribed mode
	{name: "unsubscribe", h: cmdUnsubscribe, own: cmdSubscribed},   // allowed in RESP2 subscribed mode
	{name: "psubscribe", h: cmdPSubscribe, own: cmdSubscribed},     // allowed in RESP2 subscribed mode
	{name: "punsubscribe", h: cmdPUnsubscribe, own: cmdSubscribed}, // allowed in RESP2 subscribed mode
	{name: "publish", h: cmdPublish, own: cmdMayReplicate},         // Redis's, hidden by COMMAND INFO
	{name: "pubsub", h: cmdPubsub, own: cmdPubSub | cmdStale},      // a container: Redis flags its subcommands
}
