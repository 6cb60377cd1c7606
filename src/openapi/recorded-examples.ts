// Written by `UPDATE_EXAMPLES=1 node --import tsx --test test/openapi-examples.test.ts`: real
// responses to the requests of src/openapi/examples.ts, volatile values (times, ids, keys,
// cursors) normalised. Checked by that test without UPDATE_EXAMPLES; do not edit by hand.
export const RECORDED_EXAMPLES: Record<string, { status: number; body: unknown }> = {
  "lookupWallet": {
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
  },
  "lookupBatch": {
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
  },
  "estimateList": {
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
  },
  "reverseTwitter": {
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
  },
  "reverseFarcaster": {
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
  },
  "submitJob": {
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
  },
  "jobStatus": {
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
  },
  "indexStats": {
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
  },
  "accountUsage": {
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
  },
  "listConnections": {
    "status": 200,
    "body": {
      "data": [],
      "meta": {
        "count": 0
      }
    }
  },
  "protectedResourceMetadataMcp": {
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
  },
  "protectedResourceMetadata": {
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
  },
  "authorizationServerMetadata": {
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
  },
  "registerClient": {
    "status": 201,
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
  },
  "mcp": {
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
  },
  "health": {
    "status": 200,
    "body": {
      "status": "ok"
    }
  }
};
