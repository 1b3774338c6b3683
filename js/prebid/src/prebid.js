// The demo page's Prebid.js (fixtures/site/auction.html): Prebid core and the Prebid Server
// adapter, nothing else. The page's bidders (fast, slow) have no client-side adapter: the
// adapter sends them to the s2sConfig endpoint, the service's /_ts/openrtb2/auction.
import pbjs from 'prebid.js'
import 'prebid.js/modules/prebidServerBidAdapter'

// Runs what the page queued on pbjs.que before this script loaded, and everything after.
pbjs.processQueue()
