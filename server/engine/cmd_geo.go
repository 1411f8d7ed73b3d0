package engine

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/geohash"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/longdouble"
	"github.com/iocache/iocache/server/resp"
)

// Geospatial commands on sorted sets whose scores are 52-bit geohashes, as in Redis 7.0: GEOADD,
// GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their
// _RO forms. Searches visit the centre cell and its eight neighbours by score range, as Redis
// does, so they cost O(log n + matches) and return members in Redis's order.

const (
	errGeoInvalidPair   = "ERR invalid longitude,latitude pair %f,%f"
	errGeoUnsupportUnit = "ERR unsupported unit provided. please use M, KM, FT, MI"
)

// geoUnit reads m, km, ft or mi: meters per unit.
func (s *Server) geoUnit(c *client, b []byte) (float64, bool) {
	switch {
	case resp.EqualFold(b, "m"):
		return 1, true
	case resp.EqualFold(b, "km"):
		return 1000, true
	case resp.EqualFold(b, "ft"):
		return 0.3048, true
	case resp.EqualFold(b, "mi"):
		return 1609.34, true
	}
	s.addError(c, errGeoUnsupportUnit)
	return 0, false
}

// geoLonLat reads a longitude and latitude pair and checks it is within Redis's bounds.
func (s *Server) geoLonLat(c *client, lonArg, latArg []byte) (lon, lat float64, ok bool) {
	if lon, ok = parseFloat(lonArg); !ok {
		s.addError(c, errNotFloat)
		return 0, 0, false
	}
	if lat, ok = parseFloat(latArg); !ok {
		s.addError(c, errNotFloat)
		return 0, 0, false
	}
	if lon < geohash.LonMin || lon > geohash.LonMax || lat < geohash.LatMin || lat > geohash.LatMax {
		s.addError(c, fmt.Sprintf(errGeoInvalidPair, lon, lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// writeCoords writes a [longitude, latitude] pair as Redis's addReplyHumanLongDouble does: bulk
// strings in RESP2, doubles in RESP3, both "%.17Lf" with trailing zeros trimmed.
func writeCoords(c *client, lon, lat float64) {
	c.w.Array(2)
	for _, v := range []float64{lon, lat} {
		if c.w.RESP3 {
			c.w.Buf = append(c.w.Buf, ',')
			c.w.Buf = append(c.w.Buf, longdouble.Format(v)...)
			c.w.Buf = append(c.w.Buf, '\r', '\n')
		} else {
			c.w.BulkString(longdouble.Format(v))
		}
	}
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]: a ZADD of geohash scores.
func cmdGeoAdd(s *Server, c *client, argv [][]byte) {
	at := 2
	nx, xx := false, false
	for ; at < len(argv); at++ {
		switch a := argv[at]; {
		case resp.EqualFold(a, "nx"):
			nx = true
		case resp.EqualFold(a, "xx"):
			xx = true
		case resp.EqualFold(a, "ch"):
		default:
			goto parsed
		}
	}
parsed:
	if (len(argv)-at)%3 != 0 || (nx && xx) {
		s.addError(c, errSyntax)
		return
	}
	zargv := make([][]byte, 0, at+(len(argv)-at)/3*2)
	zargv = append(zargv, []byte("zadd"))
	zargv = append(zargv, argv[1:at]...)
	for i := at; i < len(argv); i += 3 {
		lon, lat, ok := s.geoLonLat(c, argv[i], argv[i+1])
		if !ok {
			return
		}
		zargv = append(zargv, strconv.AppendUint(nil, geohash.Score(lon, lat), 10), argv[i+2])
	}
	cmdZAdd(s, c, zargv)
}

// eachMemberScore reads key's sorted set and calls fn with each member's score (found false for a
// missing key or member), after writing the reply's array header: GEOPOS and GEOHASH.
func (s *Server) eachMemberScore(c *client, key []byte, members [][]byte, fn func(score float64, found bool)) {
	z, ok := s.getZSet(c, key, forRead)
	if !ok {
		return
	}
	c.w.Array(len(members))
	for _, m := range members {
		var score float64
		found := false
		if z != nil {
			score, found = z.Score(m)
		}
		fn(score, found)
	}
}

func cmdGeoPos(s *Server, c *client, argv [][]byte) {
	s.eachMemberScore(c, argv[1], argv[2:], func(score float64, found bool) {
		if !found {
			c.w.NullArray()
			return
		}
		lon, lat := geohash.Decode(score)
		writeCoords(c, lon, lat)
	})
}

func cmdGeoDist(s *Server, c *client, argv [][]byte) {
	toMeter := 1.0
	switch {
	case len(argv) == 5:
		var ok bool
		if toMeter, ok = s.geoUnit(c, argv[4]); !ok {
			return
		}
	case len(argv) > 5:
		s.addError(c, errSyntax)
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if z == nil {
		c.w.Null()
		return
	}
	s1, ok1 := z.Score(argv[2])
	s2, ok2 := z.Score(argv[3])
	if !ok1 || !ok2 {
		c.w.Null()
		return
	}
	lon1, lat1 := geohash.Decode(s1)
	lon2, lat2 := geohash.Decode(s2)
	c.w.BulkString(strconv.FormatFloat(geohash.Distance(lon1, lat1, lon2, lat2)/toMeter, 'f', 4, 64))
}

func cmdGeoHash(s *Server, c *client, argv [][]byte) {
	s.eachMemberScore(c, argv[1], argv[2:], func(score float64, found bool) {
		if !found {
			c.w.Null()
			return
		}
		buf := geohash.String(geohash.Decode(score))
		c.w.Bulk(buf[:])
	})
}

// geoSearch flavours.
const (
	geoRadiusCoords = 1 << iota // GEORADIUS
	geoRadiusMember             // GEORADIUSBYMEMBER
	geoSearchCmd                // GEOSEARCH, GEOSEARCHSTORE
	geoSearchStore              // GEOSEARCHSTORE
	geoNoStore                  // the _RO forms
)

type geoPoint struct {
	member   string
	score    float64
	dist     float64
	lon, lat float64
}

func cmdGeoRadius(s *Server, c *client, argv [][]byte) { geoSearch(s, c, argv, 1, geoRadiusCoords) }
func cmdGeoRadiusRO(s *Server, c *client, argv [][]byte) {
	geoSearch(s, c, argv, 1, geoRadiusCoords|geoNoStore)
}
func cmdGeoRadiusByMember(s *Server, c *client, argv [][]byte) {
	geoSearch(s, c, argv, 1, geoRadiusMember)
}
func cmdGeoRadiusByMemberRO(s *Server, c *client, argv [][]byte) {
	geoSearch(s, c, argv, 1, geoRadiusMember|geoNoStore)
}
func cmdGeoSearch(s *Server, c *client, argv [][]byte) { geoSearch(s, c, argv, 1, geoSearchCmd) }
func cmdGeoSearchStore(s *Server, c *client, argv [][]byte) {
	geoSearch(s, c, argv, 2, geoSearchCmd|geoSearchStore)
}

// geoDistanceArgs reads a radius (or width and height) and a unit.
func (s *Server) geoDistanceArgs(c *client, args [][]byte, what string) ([]float64, float64, bool) {
	vals := make([]float64, len(args)-1)
	for i := range vals {
		v, ok := parseFloat(args[i])
		if !ok {
			s.addError(c, errNotFloat)
			return nil, 0, false
		}
		vals[i] = v
	}
	for _, v := range vals {
		if v < 0 {
			s.addError(c, what)
			return nil, 0, false
		}
	}
	conv, ok := s.geoUnit(c, args[len(args)-1])
	return vals, conv, ok
}

// geoSearch is Redis's georadiusGeneric, option for option and check for check.
func geoSearch(s *Server, c *client, argv [][]byte, srcAt int, flags int) {
	var storeKey []byte
	if flags&geoSearchStore != 0 {
		storeKey = argv[1]
	}
	storeDist := false
	z, ok := s.getZSet(c, argv[srcAt], forRead)
	if !ok {
		return
	}
	memberPos := func(m []byte) (float64, float64, bool) {
		score, found := z.Score(m)
		if !found {
			s.addError(c, "ERR could not decode requested zset member")
			return 0, 0, false
		}
		lon, lat := geohash.Decode(score)
		return lon, lat, true
	}
	var sh geohash.Shape
	base := srcAt + 1
	switch {
	case flags&geoRadiusCoords != 0:
		if len(argv) < 6 {
			s.addError(c, errSyntax)
			return
		}
		base = 6
		sh.Circle = true
		if sh.Lon, sh.Lat, ok = s.geoLonLat(c, argv[2], argv[3]); !ok {
			return
		}
		vals, conv, ok := s.geoDistanceArgs(c, argv[4:6], "ERR radius cannot be negative")
		if !ok {
			return
		}
		sh.Radius, sh.Conversion = vals[0], conv
	case flags&geoRadiusMember != 0:
		base = 5
		if z != nil {
			sh.Circle = true
			if sh.Lon, sh.Lat, ok = memberPos(argv[2]); !ok {
				return
			}
			vals, conv, ok := s.geoDistanceArgs(c, argv[3:5], "ERR radius cannot be negative")
			if !ok {
				return
			}
			sh.Radius, sh.Conversion = vals[0], conv
		}
	}
	withDist, withHash, withCoord := false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sortDir := 0 // 1 ascending, -1 descending
	anyMatch := false
	count := int64(0)
	rest := argv[base:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		left := len(rest) - i - 1
		switch {
		case resp.EqualFold(a, "withdist"):
			withDist = true
		case resp.EqualFold(a, "withhash"):
			withHash = true
		case resp.EqualFold(a, "withcoord"):
			withCoord = true
		case resp.EqualFold(a, "any"):
			anyMatch = true
		case resp.EqualFold(a, "asc"):
			sortDir = 1
		case resp.EqualFold(a, "desc"):
			sortDir = -1
		case resp.EqualFold(a, "count") && left >= 1:
			n, ok := s.intArg(c, rest[i+1])
			if !ok {
				return
			}
			if n <= 0 {
				s.addError(c, "ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case (resp.EqualFold(a, "store") || resp.EqualFold(a, "storedist")) && left >= 1 && flags&(geoNoStore|geoSearchCmd) == 0:
			storeKey, storeDist = rest[i+1], resp.EqualFold(a, "storedist")
			i++
		case resp.EqualFold(a, "storedist") && flags&geoSearchStore != 0:
			storeDist = true
		case resp.EqualFold(a, "frommember") && left >= 1 && flags&geoSearchCmd != 0 && !fromLoc:
			if z != nil {
				if sh.Lon, sh.Lat, ok = memberPos(rest[i+1]); !ok {
					return
				}
			}
			fromMember = true
			i++
		case resp.EqualFold(a, "fromlonlat") && left >= 2 && flags&geoSearchCmd != 0 && !fromMember:
			if sh.Lon, sh.Lat, ok = s.geoLonLat(c, rest[i+1], rest[i+2]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case resp.EqualFold(a, "byradius") && left >= 2 && flags&geoSearchCmd != 0 && !byBox:
			vals, conv, ok := s.geoDistanceArgs(c, rest[i+1:i+3], "ERR radius cannot be negative")
			if !ok {
				return
			}
			sh.Circle, sh.Radius, sh.Conversion = true, vals[0], conv
			byRadius = true
			i += 2
		case resp.EqualFold(a, "bybox") && left >= 3 && flags&geoSearchCmd != 0 && !byRadius:
			vals, conv, ok := s.geoDistanceArgs(c, rest[i+1:i+4], "ERR height or width cannot be negative")
			if !ok {
				return
			}
			sh.Circle, sh.Width, sh.Height, sh.Conversion = false, vals[0], vals[1], conv
			byBox = true
			i += 3
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	if storeKey != nil && (withDist || withHash || withCoord) {
		name := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			name = "GEOSEARCHSTORE"
		}
		s.addError(c, "ERR "+name+" is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	}
	if flags&geoSearchCmd != 0 && !(fromMember || fromLoc) {
		s.addError(c, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for "+string(argv[0]))
		return
	}
	if flags&geoSearchCmd != 0 && !(byRadius || byBox) {
		s.addError(c, "ERR exactly one of BYRADIUS and BYBOX can be specified for "+string(argv[0]))
		return
	}
	if anyMatch && count == 0 {
		s.addError(c, "ERR the ANY argument requires COUNT argument")
		return
	}
	db := s.dbs[c.db]
	if z == nil {
		if storeKey != nil {
			if r, ok := s.lookupWrite(c, storeKey); ok {
				s.deleteKey(db, r)
				s.wrote(c.db, storeKey, nil, config.NotifyGeneric, "del")
			}
			c.w.Int(0)
		} else {
			c.w.EmptyArray()
		}
		return
	}
	if count != 0 && sortDir == 0 && !anyMatch {
		sortDir = 1
	}
	limit := int64(0)
	if anyMatch {
		limit = count
	}
	points := geoCollect(z, &sh, limit)
	if len(points) == 0 && storeKey == nil {
		c.w.EmptyArray()
		return
	}
	n := int64(len(points))
	if count != 0 && count < n {
		n = count
	}
	if sortDir != 0 {
		sort.SliceStable(points, func(i, j int) bool {
			if sortDir > 0 {
				return points[i].dist < points[j].dist
			}
			return points[i].dist > points[j].dist
		})
	}
	points = points[:n]
	for i := range points {
		points[i].dist /= sh.Conversion
	}
	if storeKey == nil {
		extra := 0
		for _, on := range []bool{withDist, withHash, withCoord} {
			if on {
				extra++
			}
		}
		c.w.Array(len(points))
		for _, p := range points {
			if extra > 0 {
				c.w.Array(extra + 1)
			}
			c.w.BulkString(p.member)
			if withDist {
				c.w.BulkString(strconv.FormatFloat(p.dist, 'f', 4, 64))
			}
			if withHash {
				c.w.Int(int64(p.score))
			}
			if withCoord {
				writeCoords(c, p.lon, p.lat)
			}
		}
		return
	}
	r, existed := s.lookupWrite(c, storeKey)
	if existed {
		s.deleteKey(db, r)
	}
	if len(points) > 0 {
		out := keyspace.NewZSet()
		for _, p := range points {
			score := p.score
			if storeDist {
				score = p.dist
			}
			out.Add([]byte(p.member), score)
		}
		s.storeObject(db, storeKey, keyspace.TypeZSet, out, existed)
	}
	event := "georadiusstore"
	if flags&geoSearchCmd != 0 {
		event = "geosearchstore"
	}
	s.stored(c, config.NotifyZSet, event, storeKey, len(points) > 0, existed)
	c.w.Int(int64(len(points)))
}

// geoCollect visits the search cells in Redis's order and keeps the members inside the shape,
// stopping at limit (ANY) when it is not 0.
func geoCollect(z *keyspace.ZSet, sh *geohash.Shape, limit int64) []geoPoint {
	var points []geoPoint
	for _, cell := range sh.ScoreRanges() {
		if limit > 0 && int64(len(points)) >= limit {
			break
		}
		r := keyspace.ScoreRange{Min: cell[0], Max: cell[1], MaxOpen: true}
		z.RangeByScore(r, false, func(e keyspace.Entry) bool {
			lon, lat := geohash.Decode(e.Score)
			if d, in := sh.Contains(lon, lat); in {
				points = append(points, geoPoint{member: string(e.Member), score: e.Score, dist: d, lon: lon, lat: lat})
			}
			return limit == 0 || int64(len(points)) < limit
		})
	}
	return points
}

// geoCommands registers this file's commands (see table.go).
var geoCommands = []commandSpec{
	{name: "geoadd", h: cmdGeoAdd},
	{name: "geopos", h: cmdGeoPos},
	{name: "geodist", h: cmdGeoDist},
	{name: "geohash", h: cmdGeoHash},
	{name: "geosearch", h: cmdGeoSearch},
	{name: "geosearchstore", h: cmdGeoSearchStore},
	{name: "georadius", h: cmdGeoRadius},
	{name: "georadius_ro", h: cmdGeoRadiusRO},
	{name: "georadiusbymember", h: cmdGeoRadiusByMember},
	{name: "georadiusbymember_ro", h: cmdGeoRadiusByMemberRO},
}
