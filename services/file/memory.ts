import { PART_QUEUE, PART_SIZE } from './store';

const MiB = 1024 * 1024;

/**
 * Bytes of a body between the socket and the part being filled: the stream buffers of the
 * request, the body watch, busboy and the sniff gate (16 KiB-ish each), rounded up. The body
 * comes over TCP (a transfer, or the client's own socket), whose backpressure holds the rest
 * back in the sender.
 */
const BODY_BUFFER_BYTES = 1 * MiB;

/**
 * The most one upload holds in a file-service process: its body's stream buffers, the parts
 * uploading to S3 (PART_QUEUE) and the part buffer being filled, each chunk copied in as it
 * comes (services/file/part-upload). A bulk upload stores its files one after the other
 * (services/file/multipart), so this holds per request.
 */
export const UPLOAD_MEMORY_BYTES = BODY_BUFFER_BYTES + (PART_QUEUE + 1) * PART_SIZE;

/** RSS of a file-service process that receives nothing: about 140 MB measured, rounded up. */
export const FILE_PROCESS_BASELINE_BYTES = 160 * MiB;

/** Garbage not collected yet: part buffers and body chunks already used, until V8 runs. */
export const GC_HEADROOM_BYTES = 96 * MiB;

/** The memory a file-service process needs with FILE_MAX_UPLOADS = `maxUploads` (docs/files.md). */
export const fileProcessMemoryBound = (maxUploads: number) =>
  FILE_PROCESS_BASELINE_BYTES + GC_HEADROOM_BYTES + maxUploads * UPLOAD_MEMORY_BYTES;
