// Package backup moves a server's data between a running server and S3-compatible object
// storage, with no temporary file of the dataset on either side.
//
// A backup is the RDB of one consistent point: it asks the server for a snapshot the way
// redis-cli --rdb does (REPLCONF rdb-only 1, then PSYNC ? -1), so a replica can serve it and
// the primary does no extra work, and it records the replication ID and offset of that point.
// The payload is parsed as it passes (its key count, and the RDB's own CRC64 checked), compressed
// with zstd, hashed, and uploaded in parts; the object appears under its name only when the
// upload completes, and the manifest next to it (checksum, sizes, keys, server version, the
// caller's labels) is written last, so a backup without a manifest never looks complete.
//
// A restore reads the manifest, streams the object through the checksum and the decompressor
// into a temporary file next to the destination, checks the RDB, and renames it into place only
// when everything matched: a server started on that directory loads it or finds nothing.
//
// Retention lists the complete backups under a prefix and deletes, oldest first, those past a
// count or an age, never the newest complete one.
//
// Storage is reached through minio-go, a maintained S3 SDK (signing, multipart, retries,
// path-style and virtual-host addressing, server-side encryption, the AWS credential chain);
// nothing here signs a request by hand. The CLI (iocache-server backup|restore) is cli.go.
package backup
