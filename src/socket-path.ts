/** The longest path of a unix socket (sun_path less its NUL): libuv cuts a longer one short without a word, so the socket lands elsewhere. */
export const MAX_SOCKET_PATH = process.platform === 'linux' ? 107 : 103;
