// Text a C call wrote into a buffer of ours (getnameinfo, mkdtemp, avahi's
// address and record printers, OpenSSL's error strings), up to its NUL.
// String(cString:) on an array is deprecated, and each caller had written the
// same conversion out by hand.

extension String {
    /// The text before the first NUL of `buffer` (all of it if there is none), as UTF-8.
    init(cBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
