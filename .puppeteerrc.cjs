// The gateway drives Debian's chromium (CHROME_PATH, default /usr/bin/chromium); puppeteer must never
// download a browser of its own (no internet on build and CI machines).
module.exports = { skipDownload: true, chrome: { skipDownload: true }, 'chrome-headless-shell': { skipDownload: true } };
