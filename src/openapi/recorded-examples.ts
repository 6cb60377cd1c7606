// Written by `UPDATE_EXAMPLES=1 node --import tsx --test test/openapi-examples.test.ts`: real
// responses to the requests of src/openapi/examples.ts, volatile values (times, ids, keys,
// codes, cursors, hashes) normalised. Checked by that test without UPDATE_EXAMPLES; do not edit by hand.
import type { RecordedExample } from "./examples.ts";

export const RECORDED_EXAMPLES: Record<string, RecordedExample[]> = {
  "lookupWallet": [
    {
      "status": 200,
      "body": {
        "data": {
          "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "ens_name": "alice.eth",
          "twitter": {
            "handle": "alice",
            "url": "https://x.com/alice",
            "verified": true,
            "reachable": true,
            "reachability": "live",
            "reachability_checked_at": "2026-11-20T12:00:30.000Z"
          },
          "farcaster": {
            "username": "alice",
            "url": "https://farcaster.xyz/alice",
            "followers": 100,
            "fid": 3,
            "verified": true
          },
          "sources": [
            "onchain",
            "farcaster",
            "attested-social"
          ],
          "quality": {
            "score": 90,
            "last_verified": "2026-11-20T12:00:30.000Z"
          }
        },
        "meta": {
          "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "found": true,
          "last_updated": "2026-11-20T12:00:30.000Z",
          "stale": false
        }
      }
    }
  ],
  "lookupBatch": [
    {
      "status": 200,
      "body": {
        "data": [
          {
            "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "ens_name": "alice.eth",
            "twitter": {
              "handle": "alice",
              "url": "https://x.com/alice",
              "verified": true,
              "reachable": true,
              "reachability": "live",
              "reachability_checked_at": "2026-11-20T12:00:30.000Z"
            },
            "farcaster": {
              "username": "alice",
              "url": "https://farcaster.xyz/alice",
              "followers": 100,
              "fid": 3,
              "verified": true
            },
            "sources": [
              "onchain",
              "farcaster",
              "attested-social"
            ]
          },
          {
            "wallet": "0xcccccccccccccccccccccccccccccccccccccccc",
            "twitter": {
              "handle": "carol",
              "url": "https://x.com/carol",
              "verified": true,
              "reachable": true,
              "reachability": "live",
              "reachability_checked_at": "2026-11-20T12:00:30.000Z",
              "also": {
                "handle": "carol_alt",
                "url": "https://x.com/carol_alt",
                "source": "manual"
              }
            },
            "sources": [
              "attested-social",
              "manual"
            ]
          },
          null
        ],
        "meta": {
          "requested": 3,
          "found": 2,
          "not_found": 1,
          "matched": 2
        }
      }
    }
  ],
  "estimateList": [
    {
      "status": 200,
      "body": {
        "data": {
          "requested": 11,
          "in_index": 6,
          "previously_checked_empty": 1,
          "never_checked": 4,
          "would_bill_estimate": {
            "low": 5,
            "high": 6,
            "note": "low is exactly what a batch of this list would bill now; high adds the 4 never-checked wallets at the measured overall match rate of 14.2% (measured 2026-10-15), the ceiling for an async job that resolves them live"
          }
        },
        "meta": {
          "generated_at": "2026-11-20T12:00:30.000Z",
          "billable_predicate": "x_or_farcaster"
        }
      }
    }
  ],
  "reverseTwitter": [
    {
      "status": 200,
      "body": {
        "data": [
          {
            "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "ens_name": "alice.eth",
            "twitter": {
              "handle": "alice",
              "url": "https://x.com/alice",
              "verified": true,
              "reachable": true,
              "reachability": "live",
              "reachability_checked_at": "2026-11-20T12:00:30.000Z"
            },
            "farcaster": {
              "username": "alice",
              "url": "https://farcaster.xyz/alice",
              "followers": 100,
              "fid": 3,
              "verified": true
            },
            "sources": [
              "onchain",
              "farcaster",
              "attested-social"
            ],
            "quality_score": 90
          }
        ],
        "meta": {
          "handle": "alice",
          "total_count": 1,
          "returned_count": 1,
          "truncated": false,
          "next_cursor": null
        }
      }
    }
  ],
  "reverseFarcaster": [
    {
      "status": 200,
      "body": {
        "data": [
          {
            "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "ens_name": "alice.eth",
            "twitter": {
              "handle": "alice",
              "url": "https://x.com/alice",
              "verified": true,
              "reachable": true,
              "reachability": "live",
              "reachability_checked_at": "2026-11-20T12:00:30.000Z"
            },
            "farcaster": {
              "username": "alice",
              "url": "https://farcaster.xyz/alice",
              "followers": 100,
              "fid": 3,
              "verified": true
            },
            "sources": [
              "onchain",
              "farcaster",
              "attested-social"
            ],
            "quality_score": 90
          }
        ],
        "meta": {
          "username": "alice",
          "total_count": 1,
          "returned_count": 1,
          "truncated": false,
          "next_cursor": null
        }
      }
    }
  ],
  "submitJob": [
    {
      "status": 202,
      "body": {
        "data": {
          "job_id": "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93",
          "status": "completed",
          "wallets": 3,
          "status_url": "http://localhost:8787/api/v1/jobs/6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93"
        },
        "meta": {
          "submitted_at": "2026-11-20T12:00:30.000Z"
        }
      }
    }
  ],
  "jobStatus": [
    {
      "status": 200,
      "body": {
        "data": {
          "job_id": "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93",
          "status": "completed",
          "progress": {
            "processed": 3,
            "total": 3,
            "stage": null
          },
          "created_at": "2026-11-20T12:00:30.000Z",
          "started_at": "2026-11-20T12:00:30.000Z",
          "completed_at": "2026-11-20T12:00:30.000Z",
          "wallets": [
            "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "0xcccccccccccccccccccccccccccccccccccccccc",
            "0x3333333333333333333333333333333333333333"
          ],
          "results": [
            {
              "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
              "ens_name": "alice.eth",
              "twitter": {
                "handle": "alice",
                "url": "https://x.com/alice",
                "verified": true,
                "reachable": true,
                "reachability": "live",
                "reachability_checked_at": "2026-11-20T12:00:30.000Z"
              },
              "farcaster": {
                "username": "alice",
                "url": "https://farcaster.xyz/alice",
                "followers": 100,
                "fid": 3,
                "verified": true
              },
              "sources": [
                "onchain",
                "farcaster",
                "attested-social"
              ]
            },
            {
              "wallet": "0xcccccccccccccccccccccccccccccccccccccccc",
              "twitter": {
                "handle": "carol",
                "url": "https://x.com/carol",
                "verified": true,
                "reachable": true,
                "reachability": "live",
                "reachability_checked_at": "2026-11-20T12:00:30.000Z",
                "also": {
                  "handle": "carol_alt",
                  "url": "https://x.com/carol_alt",
                  "source": "manual"
                }
              },
              "sources": [
                "attested-social",
                "manual"
              ]
            },
            null
          ]
        },
        "meta": {
          "requested": 3,
          "matched": 2,
          "found": 2,
          "not_found": 1,
          "offset": 0,
          "limit": 1000,
          "next_offset": null
        }
      }
    }
  ],
  "indexStats": [
    {
      "status": 200,
      "body": {
        "data": {
          "total_wallets": 11,
          "wallets_checked": 12,
          "coverage": {
            "twitter": 8,
            "farcaster": 2,
            "ens": 2,
            "lens": 1,
            "github": 1
          },
          "farcaster_stats": {
            "avg_followers": 53,
            "max_followers": 100
          },
          "match_rates": {
            "measured_on": "2026-10-15",
            "basis": "Unique holder addresses of the largest NFT collections per chain, resolved against the index; a holder counts once per chain",
            "overall_either_pct": 14.2,
            "by_chain": {
              "ethereum": {
                "collections": 50,
                "holders": 412380,
                "farcaster_pct": 9.8,
                "x_pct": 11.6,
                "either_pct": 16.1
              },
              "base": {
                "collections": 40,
                "holders": 598215,
                "farcaster_pct": 12.4,
                "x_pct": 6.9,
                "either_pct": 14.8
              },
              "polygon": {
                "collections": 25,
                "holders": 233904,
                "farcaster_pct": 3.1,
                "x_pct": 5.2,
                "either_pct": 7
              }
            }
          }
        },
        "meta": {
          "generated_at": "2026-11-20T12:00:30.000Z",
          "as_of": "2026-11-20T12:00:30.000Z"
        }
      }
    }
  ],
  "accountUsage": [
    {
      "status": 200,
      "body": {
        "data": {
          "key": {
            "id": "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93",
            "name": "test",
            "prefix": "wid_live_…",
            "plan": "Developer",
            "created_at": "2026-11-20T12:00:30.000Z",
            "last_used_at": "2026-11-20T12:00:30.000Z"
          },
          "plan_limits": {
            "requests_per_minute": 60,
            "requests_per_day": 5000,
            "requests_per_month": 50000,
            "max_batch_size": 50
          },
          "rate_limits": {
            "minute": {
              "limit": 60,
              "remaining": 39,
              "reset_at": "2026-11-20T12:00:30.000Z"
            },
            "day": {
              "limit": 5000,
              "remaining": 4979,
              "reset_at": "2026-11-20T12:00:30.000Z"
            },
            "month": {
              "limit": 50000,
              "remaining": 49979,
              "reset_at": "2026-11-20T12:00:30.000Z"
            }
          },
          "credits": {
            "available": 113,
            "unmetered": false,
            "on_free_allowance": false,
            "free_window_resets_at": null
          },
          "usage": {
            "period": "day",
            "total_requests": 8,
            "total_credits": 21,
            "total_wallets": 21,
            "avg_latency_ms": 0,
            "error_rate": 0,
            "requests_by_endpoint": {
              "/v1/batch": 1,
              "/v1/estimate": 1,
              "/v1/jobs": 1,
              "/v1/jobs/{id}": 1,
              "/v1/reverse/farcaster/{username}": 1,
              "/v1/reverse/twitter/{handle}": 1,
              "/v1/stats": 1,
              "/v1/wallet/{address}": 1
            },
            "requests_by_day": [
              {
                "date": "2026-11-20",
                "count": 8,
                "credits": 21
              }
            ]
          }
        },
        "meta": {
          "generated_at": "2026-11-20T12:00:30.000Z"
        }
      }
    }
  ],
  "listConnections": [
    {
      "status": 200,
      "body": {
        "data": [],
        "meta": {
          "count": 0
        }
      }
    }
  ],
  "protectedResourceMetadataMcp": [
    {
      "status": 200,
      "body": {
        "resource": "http://localhost:8787/mcp",
        "authorization_servers": [
          "http://localhost:8787"
        ],
        "scopes_supported": [
          "mcp"
        ],
        "bearer_methods_supported": [
          "header"
        ],
        "resource_name": "walletid",
        "resource_documentation": "http://localhost:8787/docs"
      }
    }
  ],
  "protectedResourceMetadata": [
    {
      "status": 200,
      "body": {
        "resource": "http://localhost:8787/mcp",
        "authorization_servers": [
          "http://localhost:8787"
        ],
        "scopes_supported": [
          "mcp"
        ],
        "bearer_methods_supported": [
          "header"
        ],
        "resource_name": "walletid",
        "resource_documentation": "http://localhost:8787/docs"
      }
    }
  ],
  "authorizationServerMetadata": [
    {
      "status": 200,
      "body": {
        "issuer": "http://localhost:8787",
        "authorization_endpoint": "http://localhost:8787/api/oauth/authorize",
        "token_endpoint": "http://localhost:8787/api/oauth/token",
        "registration_endpoint": "http://localhost:8787/api/oauth/register",
        "revocation_endpoint": "http://localhost:8787/api/oauth/revoke",
        "response_types_supported": [
          "code"
        ],
        "response_modes_supported": [
          "query"
        ],
        "grant_types_supported": [
          "authorization_code",
          "refresh_token"
        ],
        "code_challenge_methods_supported": [
          "S256"
        ],
        "token_endpoint_auth_methods_supported": [
          "none"
        ],
        "revocation_endpoint_auth_methods_supported": [
          "none"
        ],
        "scopes_supported": [
          "mcp"
        ],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
        "service_documentation": "http://localhost:8787/docs"
      }
    }
  ],
  "registerClient": [
    {
      "status": 201,
      "headers": {
        "Cache-Control": "no-store"
      },
      "body": {
        "client_id": "wid_client_…",
        "client_id_issued_at": 0,
        "client_name": "Example MCP host",
        "redirect_uris": [
          "http://127.0.0.1:33418/callback"
        ],
        "grant_types": [
          "authorization_code",
          "refresh_token"
        ],
        "response_types": [
          "code"
        ],
        "token_endpoint_auth_method": "none",
        "scope": "mcp"
      }
    }
  ],
  "mcp": [
    {
      "status": 200,
      "body": {
        "result": {
          "content": [
            {
              "type": "text",
              "text": "{\"records\":[{\"wallet\":\"0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"found\":true,\"attested\":true,\"ens_name\":\"alice.eth\",\"x\":{\"handle\":\"alice\",\"verified\":true},\"reaches_someone\":true,\"reachability\":\"live\",\"farcaster\":{\"username\":\"alice\",\"fid\":3,\"verified\":true,\"followers\":100},\"sources\":[\"onchain\",\"farcaster\",\"attested-social\"],\"stale\":false,\"previously_checked\":true}],\"requested\":1,\"found\":1,\"billed_matches\":1,\"quota\":{\"credits_available\":113,\"unmetered\":false,\"rate_limits\":{\"minute\":{\"limit\":60,\"remaining\":38,\"reset_at\":\"2026-11-20T12:00:30.000Z\"},\"day\":{\"limit\":5000,\"remaining\":4978,\"reset_at\":\"2026-11-20T12:00:30.000Z\"},\"month\":{\"limit\":50000,\"remaining\":49978,\"reset_at\":\"2026-11-20T12:00:30.000Z\"}}}}"
            }
          ],
          "structuredContent": {
            "records": [
              {
                "wallet": "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "found": true,
                "attested": true,
                "ens_name": "alice.eth",
                "x": {
                  "handle": "alice",
                  "verified": true
                },
                "reaches_someone": true,
                "reachability": "live",
                "farcaster": {
                  "username": "alice",
                  "fid": 3,
                  "verified": true,
                  "followers": 100
                },
                "sources": [
                  "onchain",
                  "farcaster",
                  "attested-social"
                ],
                "stale": false,
                "previously_checked": true
              }
            ],
            "requested": 1,
            "found": 1,
            "billed_matches": 1,
            "quota": {
              "credits_available": 113,
              "unmetered": false,
              "rate_limits": {
                "minute": {
                  "limit": 60,
                  "remaining": 38,
                  "reset_at": "2026-11-20T12:00:30.000Z"
                },
                "day": {
                  "limit": 5000,
                  "remaining": 4978,
                  "reset_at": "2026-11-20T12:00:30.000Z"
                },
                "month": {
                  "limit": 50000,
                  "remaining": 49978,
                  "reset_at": "2026-11-20T12:00:30.000Z"
                }
              }
            }
          }
        },
        "jsonrpc": "2.0",
        "id": 1
      }
    }
  ],
  "health": [
    {
      "status": 200,
      "body": {
        "status": "ok"
      }
    }
  ],
  "authorize": [
    {
      "status": 200,
      "body": "<main>\n<div class=\"brand\">walletid</div>\n<h1>Example MCP host wants to use your walletid account</h1>\n<p class=\"host\">Client: <strong>127.0.0.1</strong><br>Returns you to: http://127.0.0.1:33418/callback</p>\n\n<h2>It will be able to</h2>\n<ul>\n<li>resolve wallets and run reverse lookups, spending your match credits</li>\n<li>submit and read lookup jobs</li>\n<li>read your credit balance and index statistics</li>\n</ul>\n<h2>It will never be able to</h2>\n<ul>\n<li class=\"no\">buy credits</li>\n<li class=\"no\">change your account or its keys</li>\n<li class=\"no\">see billing details or your email address</li>\n</ul>\n<p class=\"warn\">This client runs on a local computer (its callback is on localhost). Only continue if you started this connection yourself.</p>\n<form method=\"post\" action=\"http://localhost:8787/api/oauth/authorize\">\n<input type=\"hidden\" name=\"consent\" value=\"…\">\n<input type=\"hidden\" name=\"csrf\" value=\"…\">\n<label for=\"api_key\">One of your API keys, to prove the account is yours</label>\n<input type=\"password\" id=\"api_key\" name=\"api_key\" autocomplete=\"off\" placeholder=\"wid_live_…\">\n<div class=\"buttons\">\n<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\n<button type=\"submit\" name=\"decision\" value=\"decline\">Decline</button>\n</div>\n</form>\n<p class=\"note\">You can disconnect it at any time (GET and DELETE /api/v1/connections with your API key).</p>\n</main>",
      "excerpt": true
    }
  ],
  "authorizeDecision": [
    {
      "status": 303,
      "headers": {
        "Location": "http://127.0.0.1:33418/callback?code=…&state=af0ifjsldkj&iss=http%3A%2F%2Flocalhost%3A8787"
      }
    }
  ],
  "token": [
    {
      "status": 200,
      "headers": {
        "Cache-Control": "no-store"
      },
      "body": {
        "access_token": "wid_mcp_…",
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": "wid_mcr_…",
        "scope": "mcp"
      }
    }
  ],
  "revokeToken": [
    {
      "status": 200,
      "headers": {
        "Cache-Control": "no-store"
      }
    }
  ],
  "disconnect": [
    {
      "status": 200,
      "body": {
        "data": {
          "id": "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93",
          "disconnected": true
        },
        "meta": {
          "disconnected_at": "2026-11-20T12:00:30.000Z"
        }
      }
    }
  ],
  "buyCredits": [
    {
      "status": 402,
      "headers": {
        "PAYMENT-REQUIRED": {
          "x402Version": 2,
          "error": "Payment required",
          "resource": {
            "url": "http://localhost:8787/api/x402/buy",
            "description": "1 Agent pack of walletid match credits (12 matches, valid 12 months)",
            "mimeType": "application/json"
          },
          "accepts": [
            {
              "scheme": "exact",
              "network": "eip155:8453",
              "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
              "amount": "1000000",
              "payTo": "0x5e11e5000000000000000000000000000000a402",
              "maxTimeoutSeconds": 120,
              "extra": {
                "name": "USD Coin",
                "version": "2"
              }
            }
          ]
        }
      },
      "body": {
        "error": "Payment required: 1.00 USDC for 1 Agent pack; pay with the x402 challenge in the PAYMENT-REQUIRED header and resend this request with PAYMENT-SIGNATURE",
        "code": "PAYMENT_REQUIRED"
      }
    },
    {
      "status": 200,
      "headers": {
        "PAYMENT-RESPONSE": {
          "success": true,
          "payer": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
          "transaction": "<transaction>",
          "network": "eip155:8453"
        }
      },
      "body": {
        "api_key": "wid_live_…",
        "shown_once": true,
        "matches_added": 12,
        "quantity": 1,
        "matches_available": 12,
        "pack": "Agent",
        "newly_granted": true
      }
    }
  ],
  "recoveryChallenge": [
    {
      "status": 200,
      "body": {
        "message": "walletid key recovery\n\nSign this message to receive a new walletid API key for the account this wallet paid for.\nSigning costs nothing and moves no funds.\n\nWallet: 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266\nIssued at: 2026-11-20T12:00:30.000Z\nSite: http://localhost:8787",
        "issued_at": "2026-11-20T12:00:30.000Z",
        "token": "<token>"
      }
    }
  ],
  "recoverKey": [
    {
      "status": 200,
      "body": {
        "api_key": "wid_live_…",
        "key_prefix": "wid_live_…",
        "revoked_prefixes": []
      }
    }
  ],
  "apiReference": [
    {
      "status": 200,
      "body": "<header><h1>walletid API reference</h1><div>Version 1.0.0 · base URL <code>http://localhost:8787/api/v1</code> · <a style=\"color:#9cc3ff\" href=\"/api/v1/openapi.json\">openapi.json</a> (OpenAPI 3.1.0)</div></header>",
      "excerpt": true
    }
  ],
  "metrics": [
    {
      "status": 200,
      "body": "# HELP walletid_http_requests_total HTTP requests by route template, method and status\n# TYPE walletid_http_requests_total counter\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/wallet/:address\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/v1/batch\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/v1/estimate\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/reverse/twitter/:handle\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/reverse/farcaster/:username\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/v1/jobs\",status=\"202\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/jobs/:id\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/stats\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/usage\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/v1/connections\",status=\"200\"} 2\nwalletid_http_requests_total{method=\"GET\",route=\"/.well-known/oauth-protected-resource/mcp\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/.well-known/oauth-protected-resource\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/.well-known/oauth-authorization-server\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/oauth/register\",status=\"201\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/mcp\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/oauth/authorize\",status=\"200\"} 2\nwalletid_http_requests_total{method=\"POST\",route=\"/api/oauth/authorize\",status=\"303\"} 2\nwalletid_http_requests_total{method=\"POST\",route=\"/api/oauth/token\",status=\"200\"} 2\nwalletid_http_requests_total{method=\"POST\",route=\"/api/oauth/revoke\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"DELETE\",route=\"/api/v1/connections/:id\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/x402/buy\",status=\"402\"} 2\nwalletid_http_requests_total{method=\"POST\",route=\"/api/x402/buy\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/api/x402/recover\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"POST\",route=\"/api/x402/recover\",status=\"200\"} 1\nwalletid_http_requests_total{method=\"GET\",route=\"/docs\",status=\"200\"} 1",
      "excerpt": true
    }
  ]
};
