package keyspace

import "math/rand/v2"

// zsetBig is a large sorted set: a map from member to score plus a skip list ordered by (score,
// member) whose links carry spans, so rank queries and range-by-rank are O(log n), as in Redis.
type zsetBig struct {
	dict  map[string]float64
	zsl   *skiplist
	bytes int64
}

const (
	zslMaxLevel = 32
	zslP        = 0.25
)

type zslLevel struct {
	forward *zslNode
	span    int
}

type zslNode struct {
	member   string
	score    float64
	backward *zslNode
	level    []zslLevel
}

type skiplist struct {
	header, tail *zslNode
	length       int
	level        int
}

func newZSetBig(n int) *zsetBig {
	return &zsetBig{dict: make(map[string]float64, n), zsl: &skiplist{header: &zslNode{level: make([]zslLevel, zslMaxLevel)}, level: 1}}
}

func randomLevel() int {
	l := 1
	for l < zslMaxLevel && rand.Float64() < zslP {
		l++
	}
	return l
}

func less(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

func (zl *skiplist) insert(score float64, member string) *zslNode {
	var update [zslMaxLevel]*zslNode
	var rank [zslMaxLevel]int
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		if i != zl.level-1 {
			rank[i] = rank[i+1]
		}
		for x.level[i].forward != nil && less(x.level[i].forward.score, x.level[i].forward.member, score, member) {
			rank[i] += x.level[i].span
			x = x.level[i].forward
		}
		update[i] = x
	}
	level := randomLevel()
	if level > zl.level {
		for i := zl.level; i < level; i++ {
			rank[i] = 0
			update[i] = zl.header
			update[i].level[i].span = zl.length
		}
		zl.level = level
	}
	x = &zslNode{member: member, score: score, level: make([]zslLevel, level)}
	for i := 0; i < level; i++ {
		x.level[i].forward = update[i].level[i].forward
		update[i].level[i].forward = x
		x.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = (rank[0] - rank[i]) + 1
	}
	for i := level; i < zl.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != zl.header {
		x.backward = update[0]
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x
	} else {
		zl.tail = x
	}
	zl.length++
	return x
}

func (zl *skiplist) deleteNode(x *zslNode, update *[zslMaxLevel]*zslNode) {
	for i := 0; i < zl.level; i++ {
		if update[i].level[i].forward == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].forward = x.level[i].forward
		} else {
			update[i].level[i].span--
		}
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x.backward
	} else {
		zl.tail = x.backward
	}
	for zl.level > 1 && zl.header.level[zl.level-1].forward == nil {
		zl.level--
	}
	zl.length--
}

func (zl *skiplist) delete(score float64, member string) bool {
	var update [zslMaxLevel]*zslNode
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && less(x.level[i].forward.score, x.level[i].forward.member, score, member) {
			x = x.level[i].forward
		}
		update[i] = x
	}
	x = x.level[0].forward
	if x != nil && x.score == score && x.member == member {
		zl.deleteNode(x, &update)
		return true
	}
	return false
}

// rank is the 1-based rank of (score, member), or 0 when absent.
func (zl *skiplist) rank(score float64, member string) int {
	r := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && (less(x.level[i].forward.score, x.level[i].forward.member, score, member) ||
			(x.level[i].forward.score == score && x.level[i].forward.member == member)) {
			r += x.level[i].span
			x = x.level[i].forward
		}
		if x != zl.header && x.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based rank.
func (zl *skiplist) byRank(rank int) *zslNode {
	traversed := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && traversed+x.level[i].span <= rank {
			traversed += x.level[i].span
			x = x.level[i].forward
		}
		if traversed == rank {
			return x
		}
	}
	return nil
}

// firstInRange returns the first node with score within r.
func (zl *skiplist) firstInRange(r *ScoreRange) *zslNode {
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && !r.gteMin(x.level[i].forward.score) {
			x = x.level[i].forward
		}
	}
	x = x.level[0].forward
	if x == nil || !r.lteMax(x.score) {
		return nil
	}
	return x
}

// lastInRange returns the last node with score within r.
func (zl *skiplist) lastInRange(r *ScoreRange) *zslNode {
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && r.lteMax(x.level[i].forward.score) {
			x = x.level[i].forward
		}
	}
	if x == zl.header || !r.gteMin(x.score) {
		return nil
	}
	return x
}
