package engine

import (
	"sort"

	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/resp"
)

// Sharded pub/sub (SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS|SHARDNUMSUB), as Redis
// 7.0 serves it outside a cluster: shard channels are a namespace of their own (PUBLISH does not
// reach them, patterns do not match them), a client's shard subscriptions are counted apart from
// its channels and patterns, and any subscription keeps a RESP2 client in subscribed mode.

func cmdSSubscribe(s *Server, c *client, argv [][]byte) {
	if c.flags&(flagMulti|flagExecuting) != 0 { // EXEC runs it: a transaction may not block
		s.addError(c, "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	if s.pubsub.shardChannels == nil {
		s.pubsub.shardChannels = map[string]map[*client]struct{}{}
	}
	for _, ch := range argv[1:] {
		name := string(ch)
		if c.shardChannels == nil {
			c.shardChannels = map[string]struct{}{}
		}
		if _, ok := c.shardChannels[name]; !ok {
			c.shardChannels[name] = struct{}{}
			subs := s.pubsub.shardChannels[name]
			if subs == nil {
				subs = map[*client]struct{}{}
				s.pubsub.shardChannels[name] = subs
			}
			subs[c] = struct{}{}
		}
		subscriptionReply(c.w, "ssubscribe", ch, len(c.shardChannels), false)
	}
	s.updatePubSubFlag(c)
}

func (s *Server) unsubscribeShardChannel(c *client, name string, notify bool) {
	if _, ok := c.shardChannels[name]; ok {
		delete(c.shardChannels, name)
		if subs := s.pubsub.shardChannels[name]; subs != nil {
			delete(subs, c)
			if len(subs) == 0 {
				delete(s.pubsub.shardChannels, name)
			}
		}
	}
	if notify {
		subscriptionReply(c.w, "sunsubscribe", []byte(name), len(c.shardChannels), false)
	}
}

func cmdSUnsubscribe(s *Server, c *client, argv [][]byte) {
	if len(argv) == 1 {
		if len(c.shardChannels) == 0 {
			subscriptionReply(c.w, "sunsubscribe", nil, 0, true)
		}
		for _, name := range sortedKeys(c.shardChannels) {
			s.unsubscribeShardChannel(c, name, true)
		}
	} else {
		for _, ch := range argv[1:] {
			s.unsubscribeShardChannel(c, string(ch), true)
		}
	}
	s.updatePubSubFlag(c)
}

// cmdSPublish delivers to the shard channel's subscribers only.
func cmdSPublish(s *Server, c *client, argv [][]byte) {
	var msg2, msg3 []byte
	n := 0
	for sub := range s.pubsub.shardChannels[string(argv[1])] {
		msg := &msg2
		if sub.w.RESP3 {
			msg = &msg3
		}
		if *msg == nil {
			w := resp.Writer{RESP3: sub.w.RESP3}
			w.Push(3)
			w.BulkString("smessage")
			w.Bulk(argv[1])
			w.Bulk(argv[2])
			*msg = w.Buf
		}
		s.pushTo(sub, *msg)
		n++
	}
	s.stats.pubsubMessages++
	c.w.Int(int64(n))
}

// pubsubShardChannels is PUBSUB SHARDCHANNELS [pattern].
func (s *Server) pubsubShardChannels(c *client, pattern []byte) {
	var names []string
	for name := range s.pubsub.shardChannels {
		if pattern == nil || glob.MatchString(string(pattern), name, false) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

// pubsubShardNumSub is PUBSUB SHARDNUMSUB [channel ...].
func (s *Server) pubsubShardNumSub(c *client, channels [][]byte) {
	c.w.Array(2 * len(channels)) // an array in RESP3 too, as Redis 7.0 sends it
	for _, ch := range channels {
		c.w.Bulk(ch)
		c.w.Int(int64(len(s.pubsub.shardChannels[string(ch)])))
	}
}

// shardPubsubCommands registers this file's commands (see table.go).
var shardPubsubCommands = []commandSpec{
	{name: "ssubscribe", h: cmdSSubscribe, own: cmdSubscribed},     // allowed in RESP2 subscribed mode
	{name: "sunsubscribe", h: cmdSUnsubscribe, own: cmdSubscribed}, // allowed in RESP2 subscribed mode
	{name: "spublish", h: cmdSPublish, own: cmdMayReplicate},       // Redis's, hidden by COMMAND INFO
}
